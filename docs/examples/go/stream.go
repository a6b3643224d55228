package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/svcdev/svc/gen/client"
)

// disconnectAfter is how many events follow reads before it closes the
// stream on purpose, to show a resume: a client that reconnects with the
// last id it saw (Last-Event-ID) misses nothing and sees nothing twice.
const disconnectAfter = 2

// follow reads thread threadID's events from its stream until run runID
// ends, and answers the run's last assistant message. It reconnects with
// Last-Event-ID whenever the stream ends before that: once on purpose after
// disconnectAfter events, and whenever the service ends it (it does so,
// after a retry: hint, when it shuts down or loses its in-memory store).
func follow(ctx context.Context, api *client.ClientWithResponses, threadID, runID string) (string, error) {
	var (
		last     int64 // seq of the last event received; 0 before any
		answer   string
		resumed  bool
		finished bool
	)
	for connection := 1; !finished; connection++ {
		if connection > 20 {
			return "", fmt.Errorf("stream of thread %s: still not finished after %d connections", threadID, connection-1)
		}
		params := &client.StreamThreadParams{}
		if last > 0 {
			id := strconv.FormatInt(last, 10)
			params.LastEventID = &id
		}
		streamCtx, cancel := context.WithCancel(ctx)
		// The plain client answers the *http.Response, whose body is read as
		// it arrives; the WithResponse form would wait for the stream's end.
		resp, err := api.StreamThread(streamCtx, threadID, params, func(_ context.Context, req *http.Request) error {
			req.Header.Set("Accept", "text/event-stream")
			return nil
		})
		if err != nil {
			cancel()
			return "", err
		}
		if resp.StatusCode != http.StatusOK {
			// An error before the stream starts is JSON in the error shape.
			parsed, perr := client.ParseStreamThreadResponse(resp)
			cancel()
			if perr != nil {
				return "", perr
			}
			return "", apiError("stream thread", parsed)
		}

		retry := time.Second
		received := 0
		err = readFrames(resp.Body, func(f frame) (bool, error) {
			if f.retry > 0 {
				retry = f.retry
			}
			if f.data == "" {
				return true, nil
			}
			// A frame's id is its event's seq, gap-free per thread.
			seq, err := strconv.ParseInt(f.id, 10, 64)
			if err != nil || seq != last+1 {
				return false, fmt.Errorf("event id %q after %d: the stream skipped or repeated one", f.id, last)
			}
			var ev client.Event
			if err := json.Unmarshal([]byte(f.data), &ev); err != nil {
				return false, fmt.Errorf("event %s: %w", f.id, err)
			}
			last = seq
			received++
			text, final, err := describe(ev, runID)
			if err != nil {
				return false, fmt.Errorf("event %s: %w", f.id, err)
			}
			fmt.Printf("  %d %s %s\n", seq, f.event, text)
			if after, ok := strings.CutPrefix(text, "assistant: "); ok && f.event == "message.completed" {
				answer = after
			}
			if final {
				finished = true
				return false, nil
			}
			if !resumed && received == disconnectAfter {
				return false, nil
			}
			return true, nil
		})
		cancel()
		_ = resp.Body.Close()
		if err != nil && !errors.Is(err, context.Canceled) {
			return "", err
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		if finished {
			break
		}
		if !resumed && received == disconnectAfter {
			fmt.Printf("stream: closed after event %d on purpose; resuming with Last-Event-ID: %d\n", last, last)
			resumed = true
			continue
		}
		// The service ended the stream: reconnect after its retry hint.
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(retry):
		}
	}
	fmt.Printf("stream: events 1 to %d, none missed or repeated\n", last)
	return answer, nil
}

// describe renders an event for the log and says whether it ends run
// runID. The event is a union discriminated by its type: the generated
// ValueByDiscriminator answers the variant of that type (RunStatusEvent,
// MessageDeltaEvent, ...) with its own data. A type this client does not
// know is shown as such and skipped: the service may add types.
func describe(ev client.Event, runID string) (text string, final bool, err error) {
	v, err := ev.ValueByDiscriminator()
	if v == nil {
		kind, _ := ev.Discriminator()
		return fmt.Sprintf("%s: a type this client does not know", kind), false, nil
	}
	if err != nil {
		return "", false, err
	}
	switch e := v.(type) {
	case client.RunStatusEvent:
		s := e.Data.Status
		final = e.RunId == runID && (s == client.RunStatusSucceeded || s == client.RunStatusFailed || s == client.RunStatusCancelled)
		return string(s), final, nil
	case client.MessageDeltaEvent:
		return strconv.Quote(e.Data.Text), false, nil
	case client.MessageCompletedEvent:
		if e.Data.Role != client.MessageCompletedEventDataRoleAssistant {
			return string(e.Data.Role), false, nil
		}
		return "assistant: " + e.Data.Content, false, nil
	case client.ToolCallEvent:
		return e.Data.Name + " " + e.Data.Arguments, false, nil
	case client.ToolResultEvent:
		return fmt.Sprintf("%s (error: %t)", e.Data.Name, e.Data.IsError), false, nil
	case client.ApprovalRequestedEvent:
		return fmt.Sprintf("%s waits for a decision (%ds)", e.Data.Name, e.Data.TimeoutSeconds), false, nil
	case client.ApprovalDecidedEvent:
		return fmt.Sprintf("%s: %s", e.Data.Name, e.Data.Decision), false, nil
	case client.ContextCompactedEvent:
		return fmt.Sprintf("%d messages summarized", e.Data.ReplacedMessages), false, nil
	case client.RunErrorEvent:
		return fmt.Sprintf("%s: %s (retrying: %t)", e.Data.Code, e.Data.Message, e.Data.Retrying), false, nil
	default:
		return fmt.Sprintf("%T: a variant this client does not handle", v), false, nil
	}
}

// frame is one Server-Sent Events frame.
type frame struct {
	id, event, data string
	retry           time.Duration
}

// readFrames parses a text/event-stream (the subset svc sends: id, event,
// data and retry fields, and comment lines) and calls fn for each frame
// until fn answers false or the stream ends.
func readFrames(body io.Reader, fn func(frame) (bool, error)) error {
	r := bufio.NewReader(body)
	var f frame
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if f != (frame{}) {
				more, err := fn(f)
				if err != nil || !more {
					return err
				}
			}
			f = frame{}
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue // a comment: the service's keep-alive ping
		}
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "id":
			f.id = value
		case "event":
			f.event = value
		case "data":
			if f.data != "" {
				f.data += "\n"
			}
			f.data += value
		case "retry":
			if ms, err := strconv.Atoi(value); err == nil {
				f.retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
}
