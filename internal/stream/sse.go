package stream

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"
)

// retryHint is the reconnection delay a stream that ends asks of its client.
const retryHint = "retry: 5000\n\n"

// ResumeAfter is the sequence number a stream starts after: the
// Last-Event-ID header's when the client sent one (a reconnecting
// EventSource does), else after (the ?after query parameter, 0 when
// absent). ok is false when lastEventID is not a sequence number.
func ResumeAfter(after int64, lastEventID string) (seq int64, ok bool) {
	if lastEventID == "" {
		return after, true
	}
	n, err := strconv.ParseInt(lastEventID, 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// ServeSSE writes the events of threadID after seq after to w as
// Server-Sent Events, one frame per event (id: seq, event: type, data: the
// event's JSON), until ctx ends or the follow ends. It writes straight to the
// connection, with no pipe and no goroutine of its own, so an open stream
// costs little more than its connection. The caller checked that the reader
// may see the thread; the answer has begun when ServeSSE is called, so it
// reports nothing: a stream that ends while its client is there ends with a
// retry hint, and the client resumes after the last id it got.
func (h *Hub) ServeSSE(ctx context.Context, w http.ResponseWriter, threadID string, after int64, log *slog.Logger) {
	defer h.opts.Metrics.opened()()
	rc := http.NewResponseController(w)
	// A stream outlives any write timeout the server has.
	_ = rc.SetWriteDeadline(time.Time{})
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	sink := &sseSink{w: w, rc: rc}
	if err := rc.Flush(); err != nil {
		return // the client left
	}
	err := h.Follow(ctx, threadID, after, sink)
	switch {
	case err == nil:
	case errors.Is(err, ErrLiveLost), errors.Is(err, ErrStopping):
		_ = sink.write([]byte(retryHint))
	case sink.failed || ctx.Err() != nil:
		// The client left.
	default:
		log.Warn("thread stream failed", "thread_id", threadID, "error", err)
		_ = sink.write([]byte(retryHint))
	}
}

// sseSink frames events for the wire.
type sseSink struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	buf    bytes.Buffer
	failed bool
}

// Events writes one frame per event and flushes.
func (s *sseSink) Events(items []Item) error {
	s.buf.Reset()
	for _, it := range items {
		s.buf.WriteString("id: ")
		s.buf.WriteString(strconv.FormatInt(it.Seq, 10))
		s.buf.WriteString("\nevent: ")
		s.buf.WriteString(it.Type)
		s.buf.WriteString("\ndata: ")
		s.buf.Write(it.JSON)
		s.buf.WriteString("\n\n")
	}
	err := s.write(s.buf.Bytes())
	if s.buf.Cap() > 64<<10 {
		s.buf = bytes.Buffer{} // do not keep a large history page's buffer
	}
	return err
}

// Ping writes a comment line.
func (s *sseSink) Ping() error { return s.write([]byte(": ping\n\n")) }

func (s *sseSink) write(b []byte) error {
	if _, err := s.w.Write(b); err != nil {
		s.failed = true
		return err
	}
	if err := s.rc.Flush(); err != nil {
		s.failed = true
		return err
	}
	return nil
}
