package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcdev/svc/gen/client"
	"github.com/svcdev/svc/internal/app"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/testdb"
)

// EnvRedisURL names the Redis server tests use.
const EnvRedisURL = "TEST_REDIS_URL"

// Options adjusts the process a test starts.
type Options struct {
	Role app.Role // default all
	// DatabaseURL overrides the fresh migrated database (for example testdb.Empty(t)).
	DatabaseURL string
	// Configure edits the configuration before the process starts.
	Configure func(*config.Config)
	// BeforeStart runs after the process is built and before it starts, e.g. to add tasks.
	BeforeStart func(*app.App)
	// PauseSweeps keeps the process's background sweeps from running. A sweep's
	// first pass comes at a random moment of its interval (a minute for
	// expire_credentials), so without this a test that looks at an expired,
	// revoked or used row can see it deleted between two requests. Before the
	// process starts, another replica takes every sweep's claim for a day; its
	// Sweeps.RunOnce then skips too. The outbox engine's passes
	// (deliver_outbox, observe_outbox), which take no claim, are held instead
	// (outbox.Engine.Hold); Outbox.Deliver still runs them. It needs a
	// migrated database.
	PauseSweeps bool
}

// pausedSweepOwner holds the claims of a process started with PauseSweeps.
const pausedSweepOwner = "apitest-paused-sweeps"

// Harness is a started svc process and clients that check the contract.
type Harness struct {
	App *app.App
	// Config is the configuration the process started with.
	Config *config.Config
	// URL is the process's base URL, e.g. http://127.0.0.1:41234.
	URL string
	// HTTP is a client whose every response is checked against the contract.
	HTTP *http.Client
	// API is the generated typed client over HTTP.
	API *client.ClientWithResponses
	// Logs holds the process's log records (JSON lines).
	Logs *SyncBuffer
}

// RedisURL returns TEST_REDIS_URL, failing the test when it is unset.
func RedisURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvRedisURL)
	if u == "" {
		t.Fatalf("%s is not set: this test needs Redis. Run `make test`, or `scripts/services.sh start` and `eval \"$(scripts/services.sh env)\"`", EnvRedisURL)
	}
	return u
}

// Config returns a configuration for a test process: its own fresh database, the
// test Redis, a new key ring, a file object store of its own and a free port.
func Config(t testing.TB) *config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.Server.Listen = "127.0.0.1:0"
	cfg.Database.URL = testdb.NewURL(t)
	cfg.Database.MaxConns = 4
	cfg.Redis.URL = RedisURL(t)
	// Each test process counts rate limits and streams under keys of its own.
	cfg.Redis.KeyPrefix = "svc-test-" + id.New("t")[2:] + ":"
	cfg.Server.ShutdownTimeout = 5 * time.Second
	key := filepath.Join(t.TempDir(), "keyring.json")
	if err := keyring.Generate(key); err != nil {
		t.Fatalf("generate key ring: %v", err)
	}
	cfg.Encryption.KeyFile = key
	// Each test process keeps its objects in a directory of its own.
	cfg.ObjectStore.URL = "file://" + filepath.Join(t.TempDir(), "objects")
	return &cfg
}

// Start starts a process and stops it when the test ends.
func Start(t testing.TB, opts Options) *Harness {
	t.Helper()
	cfg := Config(t)
	if opts.DatabaseURL != "" {
		cfg.Database.URL = opts.DatabaseURL
	}
	if opts.Configure != nil {
		opts.Configure(cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("test configuration: %v", err)
	}
	role := opts.Role
	if role == "" {
		role = app.RoleAll
	}
	logs := &SyncBuffer{}
	log := app.NewLogger(config.Log{Level: "debug", Format: "json"}, logs)
	ctx := context.Background()
	a, err := app.New(ctx, cfg, role, log)
	if err != nil {
		t.Fatalf("build process: %v", err)
	}
	if opts.PauseSweeps {
		a.Outbox.Hold()
		for _, name := range a.Sweeps.Sweeps() {
			if _, err := a.Pool.Exec(ctx, `INSERT INTO sweep_claim (name, owner, claimed_at, expires_at)
				VALUES ($1, $2, now(), now() + interval '1 day')
				ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, claimed_at = excluded.claimed_at, expires_at = excluded.expires_at`,
				name, pausedSweepOwner); err != nil {
				_ = a.Shutdown()
				t.Fatalf("pause sweep %s: %v", name, err)
			}
		}
	}
	if opts.BeforeStart != nil {
		opts.BeforeStart(a)
	}
	if err := a.Start(ctx); err != nil {
		_ = a.Shutdown()
		t.Fatalf("start process: %v\nlogs:\n%s", err, logs.String())
	}
	h := &Harness{App: a, Config: cfg, URL: "http://" + a.Addr().String(), Logs: logs}
	t.Cleanup(func() {
		// A connection the client dialled but never used holds the server's
		// Shutdown for 5 s (net/http counts it idle only after that); close
		// the client's connections first, as a departing client would.
		h.HTTP.CloseIdleConnections()
		if err := a.Shutdown(); err != nil {
			var stacks strings.Builder
			_ = pprof.Lookup("goroutine").WriteTo(&stacks, 1)
			t.Errorf("shutdown: %v\ngoroutines:\n%s", err, stacks.String())
		}
	})
	chk := newChecker(t)
	chk.probesOnly = !role.Control()
	h.HTTP = &http.Client{Transport: chk.Transport(http.DefaultTransport.(*http.Transport).Clone()), Timeout: 30 * time.Second}
	h.API, err = client.NewClientWithResponses(h.URL, client.WithHTTPClient(h.HTTP))
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return h
}

// Client returns a typed client that authenticates with token.
func (h *Harness) Client(t testing.TB, token string) *client.ClientWithResponses {
	t.Helper()
	c, err := client.NewClientWithResponses(h.URL, client.WithHTTPClient(h.HTTP),
		client.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", "Bearer "+token)
			return nil
		}))
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return c
}

// Do sends a request through the checking client. body, when not nil, is sent as
// JSON; header holds name, value pairs.
func (h *Harness) Do(t testing.TB, method, path string, body any, header ...string) *http.Response {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, h.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := h.HTTP.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// Get sends a GET through the checking client.
func (h *Harness) Get(t testing.TB, path string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, h.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := h.HTTP.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// SyncBuffer is a bytes.Buffer safe for a logger and a test to share.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// WithoutIfMatch is a request editor for the typed client, whose changes
// always carry an If-Match header (the contract requires it): it takes the
// header off, so that the request is a change sent without its precondition.
func WithoutIfMatch(_ context.Context, req *http.Request) error {
	req.Header.Del("If-Match")
	return nil
}
