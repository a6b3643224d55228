package idempotency

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"hash"
	"io"
	"log/slog"
	"net/http"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/keyring"
)

// Config is what the middleware needs.
type Config struct {
	// Contract is the API's OpenAPI document: the operations that declare the
	// Idempotency-Key header parameter honour it; on others it is ignored.
	Contract *openapi3.T
	Pool     *pgxpool.Pool
	Keyring  *keyring.Ring
	Log      *slog.Logger
	// Streamed, when set, tells the operations whose body the handler
	// streams (uploads): their body is never buffered here, and its digest
	// joins the fingerprint as the handler reads it.
	Streamed func(c echo.Context) bool
	// StreamedLimit bounds the body a replayed streamed request is hashed
	// to compare it with the first: a longer one cannot have been stored.
	StreamedLimit int64
}

// Middleware applies Idempotency-Key to the requests of the operations that
// declare it. Register it after authentication and request validation: it
// needs the caller and relies on the body being strict, bounded JSON.
func Middleware(cfg Config) echo.MiddlewareFunc {
	return newMiddleware(cfg, operationsOf(cfg.Contract))
}

func newMiddleware(cfg Config, ops operations) echo.MiddlewareFunc {
	m := &middleware{ops: ops, log: cfg.Log, streamed: cfg.Streamed, streamedLimit: cfg.StreamedLimit,
		store: &store{pool: cfg.Pool, ring: cfg.Keyring, q: db.New()}}
	return m.handle
}

type middleware struct {
	ops           operations
	log           *slog.Logger
	store         *store
	streamed      func(c echo.Context) bool
	streamedLimit int64
}

func (m *middleware) handle(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		key := req.Header.Get(Header)
		if key == "" || !m.ops[opKey(req.Method, c.Path())] {
			return next(c)
		}
		caller := auth.CallerFrom(req.Context())
		if caller == nil {
			return next(c) // not authenticated: nothing to scope the key to
		}
		if m.streamed != nil && m.streamed(c) {
			return m.handleStreamed(c, next, caller, key)
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return apperr.Wrap(apperr.KindInvalidArgument, "could not read the request body", err)
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		sc := scope{
			WorkspaceID: caller.WorkspaceID, PrincipalID: caller.PrincipalID,
			Method: req.Method, Route: c.Path(), KeyHash: keyHash(key),
		}
		cl, err := m.store.begin(req.Context(), sc, fingerprint(req, body))
		if err != nil {
			return err
		}
		if cl.Replay != nil {
			return replay(c, cl.Replay)
		}
		return m.run(c, next, cl.ID, nil)
	}
}

// handleStreamed applies a key to a request whose body the handler streams
// (an upload of up to 100 MiB): the body is hashed as the handler reads it,
// never held. The record is claimed with a provisional fingerprint and, if
// the handler read the body to its end, completed with the real one;
// otherwise it is released, since no fingerprint describes an unread body.
// A later request with the key is compared only once the record is complete,
// by reading its own body through the hash.
func (m *middleware) handleStreamed(c echo.Context, next echo.HandlerFunc, caller *auth.Caller, key string) error {
	req := c.Request()
	sc := scope{
		WorkspaceID: caller.WorkspaceID, PrincipalID: caller.PrincipalID,
		Method: req.Method, Route: c.Path(), KeyHash: keyHash(key),
	}
	body := &hashingBody{r: req.Body, h: sha256.New()}
	cl, err := m.store.beginWith(req.Context(), sc, streamedFingerprint(req, nil), func(stored []byte, completed bool) (bool, error) {
		if !completed {
			return true, nil // in progress: 409 without reading the body
		}
		sum, err := body.drain(m.streamedLimit)
		if err != nil || sum == nil {
			return false, err
		}
		return subtle.ConstantTimeCompare(stored, streamedFingerprint(req, sum)) == 1, nil
	})
	if err != nil {
		return err
	}
	if cl.Replay != nil {
		return replay(c, cl.Replay)
	}
	req.Body = body
	return m.run(c, next, cl.ID, func() ([]byte, bool) {
		if !body.eof {
			return nil, false
		}
		return streamedFingerprint(req, body.h.Sum(nil)), true
	})
}

// run calls the handler while holding record rid. The response is buffered,
// then stored (or the key freed) before it is sent: once a client has the
// answer, a retry with its key replays it rather than finding it in progress.
// final, when set, gives the fingerprint to store with the response, or
// false to free the key instead.
func (m *middleware) run(c echo.Context, next echo.HandlerFunc, rid string, final func() ([]byte, bool)) error {
	res := c.Response()
	rec := &recorder{w: res.Writer}
	res.Writer = rec
	settled := false
	defer func() {
		res.Writer = rec.w
		if !settled { // the handler panicked: free the key, let the panic go on
			m.settle(c, func(ctx context.Context) error { return m.store.release(ctx, rid) })
			rec.flush()
		}
	}()
	if err := next(c); err != nil {
		// Write the error here, as Echo would after the chain, to capture it.
		c.Error(err)
	}
	settled = true
	var fp []byte
	storable := true
	if final != nil {
		fp, storable = final()
	}
	if !res.Committed || !replayable(res.Status) || !storable {
		m.settle(c, func(ctx context.Context) error { return m.store.release(ctx, rid) })
		return rec.flush()
	}
	r := response{Status: res.Status, Header: map[string]string{}, Body: rec.body.Bytes()}
	for _, h := range storedHeaders {
		if v := res.Header().Get(h); v != "" {
			r.Header[h] = v
		}
	}
	m.settle(c, func(ctx context.Context) error { return m.store.complete(ctx, rid, r, fp) })
	return rec.flush()
}

// replayable reports whether a response is stored for replay. Server errors
// are not: the request may succeed when retried. Neither are 409 and 429,
// whose cause (a resource's state, a rate) passes; the request made no change
// either way, so running it again is safe.
func replayable(status int) bool {
	return status < http.StatusInternalServerError && status != http.StatusConflict && status != http.StatusTooManyRequests
}

// settle writes a record after the handler ran. The handler's work is done, so
// a failure is logged, not answered (the response goes out as it is), and the
// record keeps its key until its lease ends.
func (m *middleware) settle(c echo.Context, write func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request().Context()), writeTimeout)
	defer cancel()
	if err := write(ctx); err != nil {
		m.log.LogAttrs(ctx, slog.LevelWarn, "idempotency record not settled; the key stays held until its lease ends",
			slog.String("request_id", c.Response().Header().Get(echo.HeaderXRequestID)),
			slog.String("error", err.Error()))
	}
}

// hashingBody hashes a request body as it is read and notes whether it was
// read to its end.
type hashingBody struct {
	r   io.ReadCloser
	h   hash.Hash
	n   int64
	eof bool
}

func (b *hashingBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.h.Write(p[:n])
	b.n += int64(n)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *hashingBody) Close() error { return b.r.Close() }

// drain reads the rest of the body through the hash and returns its sum, or
// nil when the body is longer than limit (limit 0: no bound).
func (b *hashingBody) drain(limit int64) ([]byte, error) {
	r := io.Reader(b)
	if limit > 0 {
		r = io.LimitReader(b, limit+1-b.n)
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		return nil, apperr.Wrap(apperr.KindInvalidArgument, "could not read the request body", err)
	}
	if !b.eof {
		return nil, nil
	}
	return b.h.Sum(nil), nil
}

// replay answers a stored response.
func replay(c echo.Context, r *response) error {
	h := c.Response().Header()
	for k, v := range r.Header {
		h.Set(k, v)
	}
	h.Set(ReplayedHeader, "true")
	body := r.Body
	if r.Status >= http.StatusBadRequest {
		body = withRequestID(body, h.Get(echo.HeaderXRequestID))
	}
	c.Response().WriteHeader(r.Status)
	_, err := c.Response().Write(body)
	return err
}

// withRequestID sets error.request_id in an error body to the replay's own
// request id, so that it matches X-Request-Id as in every error. Bodies of
// another shape are returned unchanged.
func withRequestID(body []byte, requestID string) []byte {
	var outer map[string]json.RawMessage
	if json.Unmarshal(body, &outer) != nil || outer["error"] == nil {
		return body
	}
	var inner map[string]json.RawMessage
	if json.Unmarshal(outer["error"], &inner) != nil {
		return body
	}
	inner["request_id"], _ = json.Marshal(requestID)
	var err error
	if outer["error"], err = json.Marshal(inner); err != nil {
		return body
	}
	out, err := json.Marshal(outer)
	if err != nil {
		return body
	}
	return out
}

// recorder holds a response back until flush. Headers go straight to the
// underlying writer's map; they are only sent with the status, at flush.
type recorder struct {
	w      http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.w.Header() }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}

// flush sends what the handler wrote, if anything.
func (r *recorder) flush() error {
	if r.status == 0 {
		return nil
	}
	r.w.WriteHeader(r.status)
	_, err := r.w.Write(r.body.Bytes())
	return err
}
