package stream

import (
	"context"
	"errors"
	"time"

	"github.com/svcdev/svc/internal/run"
)

// Errors that end a follow while its reader is still there: the reader
// should reconnect later and resume after the last event it got.
var (
	// ErrLiveLost means Redis is unreachable: the history was sent, the live
	// tail is not available.
	ErrLiveLost = errors.New("stream: the live tail is unavailable")
	// ErrStopping means the process is shutting down.
	ErrStopping = errors.New("stream: the process is stopping")
)

// historyPage is how many stored events one PostgreSQL read takes.
const historyPage = run.MaxEventsPage

// Sink receives what a follow produces, from the follow's goroutine only.
type Sink interface {
	// Events sends events, ascending and contiguous.
	Events(items []Item) error
	// Ping keeps a quiet connection alive.
	Ping() error
}

// Follow sends sink the events of threadID after seq after, in order and
// without gaps or repeats, until ctx ends (nil), the sink fails (its
// error), the live tail is lost (ErrLiveLost, after everything PostgreSQL had)
// or the process stops (ErrStopping). The caller checked that the reader may
// see the thread.
//
// It sends the history from PostgreSQL first, then follows the live tail.
// When the tail skips sequence numbers (a publish that was dropped, or a
// reader that fell behind the hub's recent events) the missing ones are read
// from PostgreSQL; at every quiet heartbeat PostgreSQL is checked once more,
// which covers an event whose publish was lost and that nothing followed.
func (h *Hub) Follow(ctx context.Context, threadID string, after int64, sink Sink) error {
	f := follower{h: h, threadID: threadID, last: after, sink: sink}
	if _, err := f.catchUp(ctx); err != nil {
		return err
	}
	t := h.join(ctx, threadID, f.last)
	defer h.leave(t)
	tick := time.NewTicker(h.opts.Heartbeat)
	defer tick.Stop()
	quiet := true
	for {
		evs, wake, gap, lost := h.since(t, f.last)
		switch {
		case gap:
			moved, err := f.catchUp(ctx)
			if err != nil {
				return err
			}
			if moved {
				quiet = false
				continue
			}
			// PostgreSQL does not have the missing events (yet): wait.
		case len(evs) > 0:
			if err := f.send(evs); err != nil {
				return err
			}
			quiet = false
			continue
		case lost != nil:
			if _, err := f.catchUp(ctx); err != nil {
				return err
			}
			return ErrLiveLost
		}
		select {
		case <-ctx.Done():
			return nil
		case <-h.stopCh():
			return ErrStopping
		case <-wake:
		case <-tick.C:
			if err := sink.Ping(); err != nil {
				return err
			}
			if quiet {
				if _, err := f.catchUp(ctx); err != nil {
					return err
				}
			}
			quiet = true
		}
	}
}

// follower is one follow's position.
type follower struct {
	h        *Hub
	threadID string
	last     int64
	sink     Sink
}

func (f *follower) send(items []Item) error {
	if err := f.sink.Events(items); err != nil {
		return err
	}
	f.last = items[len(items)-1].Seq
	return nil
}

// catchUp sends every stored event after f.last and reports whether there
// was any.
func (f *follower) catchUp(ctx context.Context) (bool, error) {
	moved := false
	for {
		evs, err := f.h.src(ctx, f.threadID, f.last, historyPage)
		if err != nil {
			if ctx.Err() != nil {
				return moved, nil
			}
			return moved, err
		}
		if len(evs) > 0 {
			items := make([]Item, len(evs))
			for i, e := range evs {
				if items[i], err = ItemOf(e); err != nil {
					return moved, err
				}
			}
			if err := f.send(items); err != nil {
				return moved, err
			}
			moved = true
		}
		if len(evs) < historyPage {
			return moved, nil
		}
	}
}
