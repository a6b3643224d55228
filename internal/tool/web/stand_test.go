package web

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// testKey is the credential every stand-in accepts. Stand-ins echo a wrong
// key in their error bodies, as some vendors do, so tests can check that it
// never reaches an error.
const testKey = "sk-test-SECRETKEY-0123456789abcdef"

// vendorBody is text only a vendor's error body holds; it must never appear
// in an error either.
const vendorBody = "VENDOR-BODY-TEXT"

// seen is one request a stand-in received.
type seen struct {
	Method string
	Path   string
	Query  url.Values
	Header http.Header
	Body   map[string]any
}

// stand is a local stand-in for one vendor endpoint: it answers method and
// path with the vendor's auth scheme, and replies with the queued answers
// (the last one repeats), recording every request.
type stand struct {
	srv    *httptest.Server
	method string
	path   string
	// key extracts the credential from a request as the vendor reads it.
	key func(*http.Request) string

	mu      sync.Mutex
	reqs    []seen
	answers []answer
}

// answer is one reply of a stand-in.
type answer struct {
	status int
	header map[string]string
	body   string
}

func ok(body string) answer { return answer{status: 200, body: body} }

func newStand(t *testing.T, method, path string, key func(*http.Request) string, answers ...answer) *stand {
	t.Helper()
	s := &stand{method: method, path: path, key: key, answers: answers}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *stand) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	rec := seen{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone()}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &rec.Body)
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, rec)
	a := s.answers[0]
	if len(s.answers) > 1 {
		s.answers = s.answers[1:]
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method != s.method || r.URL.Path != s.path:
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":"not found `+vendorBody+`"}`)
		return
	case s.key != nil && s.key(r) != testKey:
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":"Invalid API key `+s.key(r)+` `+vendorBody+`"}`)
		return
	}
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(a.status)
	_, _ = io.WriteString(w, a.body)
}

func (s *stand) requests() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seen(nil), s.reqs...)
}

// only returns the one request received, failing otherwise.
func (s *stand) only(t *testing.T) seen {
	t.Helper()
	r := s.requests()
	if len(r) != 1 {
		t.Fatalf("the vendor received %d requests, want 1: %+v", len(r), r)
	}
	return r[0]
}

// Auth schemes of the vendors.
func header(name string) func(*http.Request) string {
	return func(r *http.Request) string { return r.Header.Get(name) }
}

func prefixed(name, prefix string) func(*http.Request) string {
	return func(r *http.Request) string {
		v := r.Header.Get(name)
		if !strings.HasPrefix(v, prefix) {
			return ""
		}
		return strings.TrimPrefix(v, prefix)
	}
}

func queryParam(name string) func(*http.Request) string {
	return func(r *http.Request) string { return r.URL.Query().Get(name) }
}

// newTestClient builds a client of typ whose base URL member points at the
// stand-in, with fast retries.
func newTestClient(t *testing.T, typ string, config map[string]any) *Client {
	t.Helper()
	cfg, err := json.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(Provider{Type: typ, Config: cfg, Credential: json.RawMessage(`{"api_key":"` + testKey + `"}`)})
	if err != nil {
		t.Fatalf("NewClient(%s): %v", typ, err)
	}
	c.retryWait = 5 * time.Millisecond
	return c
}

func ts(s string) *time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return &t
}
