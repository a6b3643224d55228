package webhook_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/outbox"
	"github.com/svcdev/svc/internal/subscription"
	"github.com/svcdev/svc/internal/webhook"
)

// farm is one local server standing for many webhook endpoints: a path under
// /hung/ never answers (until the test ends), /slow/ answers 204 after delay,
// any other path answers 204 at once. It records when each request arrived
// and the most requests each path had in flight at once.
type farm struct {
	srv    *httptest.Server
	policy *endpoint.Policy
	port   int
	delay  time.Duration
	stop   chan struct{}

	mu       sync.Mutex
	arrivals map[string][]time.Time
	inFlight map[string]int
	peak     map[string]int
}

func newFarm(t testing.TB, delay time.Duration) *farm {
	t.Helper()
	f := &farm{delay: delay, stop: make(chan struct{}), arrivals: map[string][]time.Time{}, inFlight: map[string]int{}, peak: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	// Registered after the server: cleanups run last first, so the hung
	// handlers return before the server waits for them.
	t.Cleanup(f.srv.Close)
	t.Cleanup(func() { close(f.stop) })
	port, err := strconv.ParseUint(f.srv.URL[strings.LastIndexByte(f.srv.URL, ':')+1:], 10, 16)
	require.NoError(t, err)
	f.port = int(port)
	f.policy = loopback(uint16(port), newResolver())
	return f
}

func (f *farm) serve(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	path := r.URL.Path
	f.mu.Lock()
	f.arrivals[path] = append(f.arrivals[path], time.Now())
	f.inFlight[path]++
	f.peak[path] = max(f.peak[path], f.inFlight[path])
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inFlight[path]--
		f.mu.Unlock()
	}()
	switch {
	case strings.HasPrefix(path, "/hung/"):
		select {
		case <-f.stop:
		case <-r.Context().Done():
		}
		return
	case strings.HasPrefix(path, "/slow/"):
		select {
		case <-time.After(f.delay):
		case <-f.stop:
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// url is the farm's URL for path, through the test resolver's hooks.test.
func (f *farm) url(path string) string {
	return "http://hooks.test:" + strconv.Itoa(f.port) + path
}

// arrived returns when path's requests arrived, oldest first.
func (f *farm) arrived(path string) []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.arrivals[path]...)
}

// peakOf is the most requests path had in flight at once.
func (f *farm) peakOf(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.peak[path]
}

// subscribeMany creates a subscription of the bundle's workspace to each of
// the farm's paths for eventType, under a cap that admits them all, and
// returns their ids in order.
func (b *testBundle) subscribeMany(t testing.TB, f *farm, eventType string, paths ...string) []string {
	t.Helper()
	svc := subscription.NewService(b.pool, b.ring, f.policy, subscription.WithMaxPerWorkspace(1000))
	ids := make([]string, 0, len(paths))
	for _, p := range paths {
		s, err := svc.Create(t.Context(), b.caller, subscription.CreateInput{URL: f.url(p), EventTypes: []string{eventType}})
		require.NoError(t, err)
		ids = append(ids, s.Subscription.ID)
	}
	return ids
}

// webhookEngine is an engine delivering webhooks with d under cfg.
func webhookEngine(b *testBundle, cfg config.Outbox, replica string, d *webhook.Deliverer) *outbox.Engine {
	e := outbox.NewEngine(b.pool, cfg, replica, slog.New(slog.DiscardHandler), outbox.NewMetrics(prometheus.NewRegistry()))
	e.Register(outbox.KindWebhook, d)
	return e
}

// runSender runs e as a control replica does (outbox.Engine.Run) until the
// test ends: a deliver pass whenever it is woken (by the commit of an
// enqueue) and at least every interval.
func runSender(t testing.TB, e *outbox.Engine, interval time.Duration) {
	t.Helper()
	e.Scan = interval
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func paths(prefix string, n int) []string {
	out := make([]string, n)
	for i := range n {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}
