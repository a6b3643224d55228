// Package webhooktest is a webhook receiver for tests: a local HTTP server
// that records what it receives and answers as told, and Verify, a reference
// implementation of Standard Webhooks verification written from the
// specification (https://www.standardwebhooks.com), independent of the code
// in package webhook that signs. For tests only.
package webhooktest

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// DefaultTolerance is the timestamp tolerance receivers use by default.
const DefaultTolerance = 5 * time.Minute

// Verification failures.
var (
	ErrMissingHeaders = errors.New("webhooktest: missing webhook-id, webhook-timestamp or webhook-signature")
	ErrTimestamp      = errors.New("webhooktest: timestamp outside the tolerance")
	ErrSignature      = errors.New("webhooktest: no matching signature")
)

// Verify checks a request's Standard Webhooks headers against body as a
// receiver does: the secret is `whsec_` and the base64 of the key; the signed
// content is "{webhook-id}.{webhook-timestamp}.{body}"; webhook-signature is a
// space-separated list of "v1,<base64 HMAC-SHA256>" of which one must match
// (compared in constant time); the timestamp must lie within tolerance of now.
func Verify(secret string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	msgID, stamp, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if msgID == "" || stamp == "" || sigs == "" {
		return ErrMissingHeaders
	}
	ts, err := strconv.ParseInt(stamp, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %q is not unix seconds", ErrTimestamp, stamp)
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: %s off", ErrTimestamp, d)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return fmt.Errorf("webhooktest: secret: %w", err)
	}
	mac := hmac.New(sha256.New, key)
	_, _ = io.WriteString(mac, msgID+"."+stamp+".")
	_, _ = mac.Write(body)
	want := mac.Sum(nil)
	for _, sig := range strings.Fields(sigs) {
		version, value, ok := strings.Cut(sig, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(value)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return ErrSignature
}

// Request is one request a Receiver got.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
	At     time.Time
}

// Receiver is a local webhook endpoint. Its Handler decides each answer; by
// default it answers 204.
type Receiver struct {
	*httptest.Server
	// Port is the port it listens on.
	Port uint16

	mu       sync.Mutex
	handler  http.HandlerFunc
	requests []Request
	changed  chan struct{}
}

// NewReceiver starts a plain HTTP receiver on 127.0.0.1 until the test ends.
func NewReceiver(t testing.TB) *Receiver {
	t.Helper()
	return newReceiver(t, "127.0.0.1:0")
}

// NewReceiverOn starts a receiver listening on addr, such as "127.0.0.2:0";
// the test is skipped when the address cannot be used.
func NewReceiverOn(t testing.TB, addr string) *Receiver {
	t.Helper()
	return newReceiver(t, addr)
}

func newReceiver(t testing.TB, addr string) *Receiver {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	r := &Receiver{changed: make(chan struct{})}
	r.Server = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	_ = r.Server.Listener.Close()
	r.Server.Listener = l
	r.Server.Start()
	t.Cleanup(r.Server.Close)
	_, port, _ := net.SplitHostPort(l.Addr().String())
	p, _ := strconv.ParseUint(port, 10, 16)
	r.Port = uint16(p)
	return r
}

// Handle makes h answer the following requests (nil: 204).
func (r *Receiver) Handle(h http.HandlerFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.handler = h
}

// Respond makes the following requests answered with status and body.
func (r *Receiver) Respond(status int, body string) {
	r.Handle(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	})
}

// URL is the receiver's URL with host in place of its address, and path.
func (r *Receiver) URL(host, path string) string {
	return "http://" + net.JoinHostPort(host, strconv.Itoa(int(r.Port))) + path
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.requests = append(r.requests, Request{Method: req.Method, Path: req.URL.Path, Header: req.Header.Clone(), Body: body, At: time.Now()})
	close(r.changed)
	r.changed = make(chan struct{})
	h := r.handler
	r.mu.Unlock()
	if h == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	h(w, req)
}

// Requests returns the requests received so far, oldest first.
func (r *Receiver) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.requests...)
}

// WaitFor waits until the receiver has received at least n requests, or ctx
// ends, and returns the requests.
func (r *Receiver) WaitFor(ctx context.Context, n int) ([]Request, error) {
	for {
		r.mu.Lock()
		got, changed := append([]Request(nil), r.requests...), r.changed
		r.mu.Unlock()
		if len(got) >= n {
			return got, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return got, fmt.Errorf("webhooktest: %d of %d requests received: %w", len(got), n, ctx.Err())
		}
	}
}
