// Package reqbody bounds how request bodies are read: how long they may take,
// how large they may be and how many may be in flight at once, depending on
// whether the request carried credentials in its headers.
//
// Every request body is wrapped by Guard.Wrap when the request arrives and is
// then unauthenticated: it may hold at most Limits.UnauthenticatedBytes, must
// arrive whole within Limits.UnauthenticatedTimeout, and takes one of
// Limits.UnauthenticatedBodies slots when it is first read, at most
// Limits.UnauthenticatedBodiesPerClient of them for one client address;
// with no slot free the read fails at once with 503 unavailable, before a
// byte is read. Code that
// has checked the request's credentials (an API key, a console session) calls
// Authenticate before reading; the body is then held to a minimum rate
// instead: it must arrive within Limits.Grace plus its size divided by
// Limits.MinBytesPerSecond, the read deadline moving forward as bytes arrive,
// so a large upload at a sane rate is never cut while a stalled one is.
//
// Deadlines are set on the connection with http.ResponseController, so a read
// blocked on a silent client returns when they pass; the read then fails with
// 408 request_timeout. A body that was not read to its end when the response
// is written makes the server close the connection (Unread), rather than wait
// for the rest of it before answering.
package reqbody

import (
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcdev/svc/internal/apperr"
)

// Limits are the bounds of request bodies (server.body_read_timeout,
// server.body_min_bytes_per_second, server.unauthenticated_body_timeout,
// limits.unauthenticated_body_bytes, limits.unauthenticated_bodies,
// limits.unauthenticated_bodies_per_client).
type Limits struct {
	// Grace is how far an authenticated body may fall behind MinBytesPerSecond.
	Grace time.Duration
	// MinBytesPerSecond is the slowest an authenticated body may arrive on
	// average, once Grace is spent.
	MinBytesPerSecond int64
	// UnauthenticatedTimeout is the time an unauthenticated body has to
	// arrive whole, counted from the request's arrival.
	UnauthenticatedTimeout time.Duration
	// UnauthenticatedBytes is the largest unauthenticated body.
	UnauthenticatedBytes int64
	// UnauthenticatedBodies is how many unauthenticated bodies may be read
	// at once in this process.
	UnauthenticatedBodies int
	// UnauthenticatedBodiesPerClient is how many of those one client
	// address may hold, so that one client cannot take them all (0: no
	// bound of its own).
	UnauthenticatedBodiesPerClient int
}

// Guard wraps request bodies and counts the unauthenticated ones in flight.
type Guard struct {
	limits Limits
	slots  chan struct{}
	// held counts the slots each client address holds.
	mu   sync.Mutex
	held map[string]int
	// inFlight and refused, when set, export the slots in use and the
	// bodies refused for want of one.
	inFlight prometheus.Gauge
	refused  prometheus.Counter
}

// NewGuard builds a guard. inFlight and refused may be nil.
func NewGuard(l Limits, inFlight prometheus.Gauge, refused prometheus.Counter) *Guard {
	return &Guard{limits: l, slots: make(chan struct{}, max(l.UnauthenticatedBodies, 0)), held: map[string]int{},
		inFlight: inFlight, refused: refused}
}

// InFlight is the number of unauthenticated bodies being read now.
func (g *Guard) InFlight() int { return len(g.slots) }

func (g *Guard) acquire(client string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if per := g.limits.UnauthenticatedBodiesPerClient; per > 0 && client != "" && g.held[client] >= per {
		if g.refused != nil {
			g.refused.Inc()
		}
		return false
	}
	select {
	case g.slots <- struct{}{}:
		g.held[client]++
		if g.inFlight != nil {
			g.inFlight.Inc()
		}
		return true
	default:
		if g.refused != nil {
			g.refused.Inc()
		}
		return false
	}
}

func (g *Guard) release(client string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held[client]--; g.held[client] <= 0 {
		delete(g.held, client)
	}
	<-g.slots
	if g.inFlight != nil {
		g.inFlight.Dec()
	}
}

// Wrap replaces r's body, if it has one, with a guarded, unauthenticated
// body whose deadlines are set through w (the server's own ResponseWriter,
// not a wrapper that hides it); client is the address its slot counts
// against ("" counts against none). It returns the body, or nil when r has
// none; the caller must Close it when the request ends, to free its slot.
func (g *Guard) Wrap(w http.ResponseWriter, r *http.Request, client string) *Body {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	b := &Body{src: r.Body, guard: g, client: client, rc: http.NewResponseController(w), start: time.Now(), length: r.ContentLength}
	r.Body = b
	return b
}

// Authenticate marks r's guarded body as sent by a caller whose credentials
// were checked: it is held to the minimum rate rather than to the
// unauthenticated size, time and slots. Call it before the body is read; a
// body that is not guarded is left alone.
func Authenticate(r *http.Request) {
	if b, ok := r.Body.(*Body); ok && b.n == 0 && !b.slot {
		b.authenticated = true
	}
}

// Unread reports whether r has a guarded body that was neither read to its
// end nor failed: answering now leaves bytes on the connection.
func Unread(b *Body) bool { return b != nil && !b.eof }

// Body is a guarded request body.
type Body struct {
	src           io.ReadCloser
	guard         *Guard
	client        string
	rc            *http.ResponseController
	start         time.Time
	length        int64 // Content-Length, or -1
	authenticated bool
	slot          bool
	n             int64
	eof           bool
	err           error
}

// Read reads from the body within its bounds; see the package comment.
func (b *Body) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.eof {
		return 0, io.EOF
	}
	l := b.guard.limits
	if !b.authenticated {
		if b.length > l.UnauthenticatedBytes {
			return 0, b.fail(b.tooLarge())
		}
		if !b.slot {
			if !b.guard.acquire(b.client) {
				return 0, b.fail(&apperr.Error{Kind: apperr.KindUnavailable, RetryAfter: time.Second,
					Msg: "too many requests without credentials are sending bodies; retry after the time in Retry-After"})
			}
			b.slot = true
		}
		// One byte past the limit tells a body that is too large.
		if rest := l.UnauthenticatedBytes - b.n + 1; int64(len(p)) > rest {
			p = p[:rest]
		}
	}
	b.setDeadline(b.deadline())
	n, err := b.src.Read(p)
	b.n += int64(n)
	switch {
	case !b.authenticated && b.n > l.UnauthenticatedBytes:
		return 0, b.fail(b.tooLarge())
	case err == io.EOF:
		b.eof = true
		b.finish()
		// No deadline after the end: the server reads the connection in the
		// background while the handler runs, and a deadline passing then
		// would cancel the request.
		b.setDeadline(time.Time{})
	case err != nil && isTimeout(err):
		return n, b.fail(b.timeout())
	case err != nil:
		return n, b.fail(err)
	}
	return n, err
}

// Close frees the body's slot, if it still holds one; the server closes the
// underlying body itself.
func (b *Body) Close() error {
	if b.err == nil && !b.eof {
		b.err = http.ErrBodyReadAfterClose
	}
	b.finish()
	return nil
}

// deadline is when the next byte must have arrived.
func (b *Body) deadline() time.Time {
	l := b.guard.limits
	if !b.authenticated {
		return b.start.Add(l.UnauthenticatedTimeout)
	}
	return b.start.Add(l.Grace + time.Duration(float64(b.n)/float64(l.MinBytesPerSecond)*float64(time.Second)))
}

// setDeadline sets the connection's read deadline. A writer that cannot
// (a test recorder) leaves the body without one.
func (b *Body) setDeadline(t time.Time) {
	_ = b.rc.SetReadDeadline(t)
}

func (b *Body) fail(err error) error {
	b.err = err
	b.finish()
	return err
}

// finish frees the body's slot: the body is no longer in flight.
func (b *Body) finish() {
	if b.slot {
		b.slot = false
		b.guard.release(b.client)
	}
}

func (b *Body) tooLarge() error {
	return apperr.New(apperr.KindPayloadTooLarge, "a request without credentials may carry at most "+
		strconv.FormatInt(b.guard.limits.UnauthenticatedBytes, 10)+" bytes (limits.unauthenticated_body_bytes)")
}

func (b *Body) timeout() error {
	if !b.authenticated {
		return apperr.New(apperr.KindRequestTimeout, "the request body did not arrive within "+
			b.guard.limits.UnauthenticatedTimeout.String()+" (server.unauthenticated_body_timeout)")
	}
	return apperr.New(apperr.KindRequestTimeout, "the request body arrived slower than "+
		strconv.FormatInt(b.guard.limits.MinBytesPerSecond, 10)+" bytes a second (server.body_min_bytes_per_second) for longer than "+
		b.guard.limits.Grace.String()+" (server.body_read_timeout)")
}

// isTimeout reports whether err is a body's read deadline passing.
func isTimeout(err error) bool {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne) && ne.Timeout()
}
