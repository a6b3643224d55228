package run

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/timestamp"
)

// Event types of a thread's stream
// (docs/decisions/0032-threads-runs-api-and-streams.md).
const (
	EventRunStatus         = "run.status"
	EventMessageDelta      = "message.delta"
	EventMessageCompleted  = "message.completed"
	EventToolCall          = "tool.call"
	EventToolResult        = "tool.result"
	EventError             = "run.error"
	EventApprovalRequested = "approval.requested"
	EventApprovalDecided   = "approval.decided"
)

// eventErrorOld is the type a build before schema version 23 writes for
// EventError (an SSE event named `error` collides with the EventSource's own
// `error` event). Migration 00023 renames the stored ones; an old replica
// still running during a rolling upgrade writes more, so reads map it too.
const eventErrorOld = "error"

// EventType is the type an event of type t reads as: EventError for the type
// an older build writes, t otherwise.
func EventType(t string) string {
	if t == eventErrorOld {
		return EventError
	}
	return t
}

// Event is one event of a thread: its sequence number is gap-free per thread.
// Its JSON is the contract's Event (MarshalJSON).
type Event struct {
	ThreadID string          `json:"-"`
	Seq      int64           `json:"seq"`
	Type     string          `json:"type"`
	RunID    *string         `json:"run_id"`
	At       time.Time       `json:"at"`
	Data     json.RawMessage `json:"data"`
}

// wireEvent is an Event as it is written: At in the one time stamp form
// of the API (package timestamp).
type wireEvent struct {
	Seq   int64           `json:"seq"`
	Type  string          `json:"type"`
	RunID *string         `json:"run_id"`
	At    timestamp.Time  `json:"at"`
	Data  json.RawMessage `json:"data"`
}

// MarshalJSON encodes e as the events list and the stream answer it:
// seq, type, run_id, at (RFC 3339 in UTC with six fractional digits) and
// data.
func (e Event) MarshalJSON() ([]byte, error) {
	return json.Marshal(wireEvent{Seq: e.Seq, Type: e.Type, RunID: e.RunID, At: timestamp.Of(e.At), Data: e.Data})
}

// NewEvent is an event about to be written.
type NewEvent struct {
	Type string
	Data any
}

// RunStatusData is the data of a run.status event.
type RunStatusData struct {
	Status  Status   `json:"status"`
	Attempt *int32   `json:"attempt"`
	Error   *Failure `json:"error"`
}

// DeltaData is the data of a message.delta event: text the model streamed.
type DeltaData struct {
	Text string `json:"text"`
}

// MessageData is the data of a message.completed event.
type MessageData struct {
	Role      string     `json:"role"`
	Content   string     `json:"content"`
	ToolCalls []ToolCall `json:"tool_calls"`
}

// ToolCallData is the data of a tool.call event.
type ToolCallData struct {
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolResultData is the data of a tool.result event.
type ToolResultData struct {
	CallID  string `json:"call_id"`
	Name    string `json:"name"`
	Content string `json:"content"`
	IsError bool   `json:"is_error"`
}

// ErrorData is the data of an error event: something went wrong; Retrying
// says the run goes on (a step retried in a new attempt, say).
type ErrorData struct {
	Code     string `json:"code"`
	Message  string `json:"message"`
	Retrying bool   `json:"retrying"`
}

// Publisher carries events to live streams after their transaction
// committed. It is best effort: PostgreSQL holds every event, and a stream
// that misses one reads it from there.
type Publisher interface {
	Publish(ctx context.Context, threadID string, events []Event)
}

// nopPublisher publishes nothing.
type nopPublisher struct{}

func (nopPublisher) Publish(context.Context, string, []Event) {}

// encodedEvents are events about to be written, as the queries take them.
type encodedEvents struct {
	types []string
	data  []json.RawMessage
	ords  []int32
}

func encodeEvents(evs []NewEvent) (encodedEvents, error) {
	out := encodedEvents{types: make([]string, len(evs)), data: make([]json.RawMessage, len(evs)), ords: make([]int32, len(evs))}
	for i, e := range evs {
		b, err := json.Marshal(e.Data)
		if err != nil {
			return encodedEvents{}, fmt.Errorf("encode %s event: %w", e.Type, err)
		}
		out.types[i], out.data[i], out.ords[i] = e.Type, jsonbSafe(b), int32(i+1)
	}
	return out, nil
}

// jsonbSafe replaces each escaped NUL character (\u0000) of the JSON text b
// with U+FFFD: PostgreSQL's jsonb refuses NUL, and a model may well stream
// one, which would otherwise make its step impossible to record, attempt
// after attempt. Escapes are walked one by one, so an escaped backslash
// followed by "u0000" is left alone.
func jsonbSafe(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u0000`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 == len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) && string(b[i+2:i+6]) == "0000" {
			out = append(out, `\ufffd`...)
			i += 5
			continue
		}
		out = append(out, b[i], b[i+1])
		i++
	}
	return out
}

// textSafe replaces NUL characters, which PostgreSQL's text refuses, with
// U+FFFD.
func textSafe(s string) string {
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

// written answers the events as written, numbered up to lastSeq.
func (e encodedEvents) written(threadID string, runID *string, lastSeq int64, at time.Time) []Event {
	out := make([]Event, len(e.types))
	first := lastSeq - int64(len(e.types))
	for i := range e.types {
		out[i] = Event{ThreadID: threadID, Seq: first + int64(i) + 1, Type: e.types[i], RunID: runID, At: at, Data: e.data[i]}
	}
	return out
}

// appendEvents writes events of thread threadID in q (the transaction of the
// change they report) with the next sequence numbers, and returns them.
func appendEvents(ctx context.Context, q db.DBTX, workspaceID, threadID string, runID *string, evs []NewEvent) ([]Event, error) {
	if len(evs) == 0 {
		return nil, nil
	}
	enc, err := encodeEvents(evs)
	if err != nil {
		return nil, err
	}
	rows, err := db.New().EventAppend(ctx, q, db.EventAppendParams{ThreadID: threadID, WorkspaceID: workspaceID, RunID: runID,
		Types: enc.types, Data: enc.data, Ords: enc.ords})
	if err != nil {
		return nil, fmt.Errorf("append thread events: %w", err)
	}
	out := make([]Event, len(rows))
	for i, r := range rows {
		out[i] = eventOf(r)
	}
	return out, nil
}

func eventOf(r db.ThreadEvent) Event {
	return Event{ThreadID: r.ThreadID, Seq: r.Seq, Type: EventType(r.Type), RunID: r.RunID, At: r.At, Data: r.Data}
}
