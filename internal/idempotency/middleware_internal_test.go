package idempotency

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/openapi"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/testdb"
)

// unitBundle is the middleware in front of test routes on a real database,
// with a fixed caller in place of authentication.
type unitBundle struct {
	srv   *httptest.Server
	pool  *pgxpool.Pool
	calls atomic.Int32
	// release unblocks /slow.
	release chan struct{}
	// entered is signalled when /slow starts.
	entered chan struct{}
}

func setupUnit(t *testing.T) *unitBundle {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keyring.json")
	require.NoError(t, keyring.Generate(path))
	ring, err := keyring.Load(path)
	require.NoError(t, err)
	b := &unitBundle{pool: testdb.New(t), release: make(chan struct{}), entered: make(chan struct{}, 8)}

	e := echo.New()
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		status := http.StatusInternalServerError
		if ae, ok := apperr.As(err); ok {
			status = map[apperr.Kind]int{apperr.KindConflict: http.StatusConflict, apperr.KindUnavailable: http.StatusServiceUnavailable}[ae.Kind]
		}
		_ = c.JSON(status, map[string]string{"error": err.Error()})
	}
	caller := &auth.Caller{WorkspaceID: "ws_test", PrincipalID: "pri_test"}
	e.Use(recoverPanics, func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			c.SetRequest(c.Request().WithContext(auth.WithCaller(c.Request().Context(), caller)))
			return next(c)
		}
	})
	ops := operations{}
	for _, r := range []string{"/ok", "/fail", "/panic", "/slow", "/conflict"} {
		ops[opKey(http.MethodPost, r)] = true
	}
	e.Use(newMiddleware(Config{Pool: b.pool, Keyring: ring, Log: slog.New(slog.DiscardHandler)}, ops))
	e.POST("/ok", func(c echo.Context) error {
		n := b.calls.Add(1)
		c.Response().Header().Set("Location", "/things/"+string(rune('0'+n)))
		return c.JSON(http.StatusCreated, map[string]int32{"n": n})
	})
	e.POST("/fail", func(echo.Context) error {
		b.calls.Add(1)
		return apperr.Unavailable("down", nil)
	})
	e.POST("/panic", func(echo.Context) error {
		b.calls.Add(1)
		panic("boom")
	})
	e.POST("/conflict", func(echo.Context) error {
		b.calls.Add(1)
		return apperr.New(apperr.KindConflict, "busy")
	})
	e.POST("/slow", func(c echo.Context) error {
		b.calls.Add(1)
		b.entered <- struct{}{}
		<-b.release
		return c.JSON(http.StatusCreated, map[string]string{"ok": "yes"})
	})
	b.srv = httptest.NewServer(e)
	t.Cleanup(b.srv.Close)
	return b
}

// recoverPanics turns a panic into a 500, as the service's observe middleware does.
func recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = errors.New("panic")
			}
		}()
		return next(c)
	}
}

func (b *unitBundle) post(t *testing.T, path, key, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.srv.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set(Header, key)
	}
	resp, err := b.srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(out)
}

func (b *unitBundle) records(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT count(*) FROM idempotency_key").Scan(&n))
	return n
}

func TestMiddlewareUnit(t *testing.T) {
	t.Parallel()

	t.Run("ServerErrorFreesTheKey", func(t *testing.T) {
		t.Parallel()
		b := setupUnit(t)
		for range 2 {
			resp, _ := b.post(t, "/fail", "k", `{}`)
			require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
			require.Empty(t, resp.Header.Get(ReplayedHeader))
			require.Zero(t, b.records(t))
		}
		require.EqualValues(t, 2, b.calls.Load(), "a retry after a 5xx runs again")
	})

	t.Run("PanicFreesTheKey", func(t *testing.T) {
		t.Parallel()
		b := setupUnit(t)
		for range 2 {
			resp, _ := b.post(t, "/panic", "k", `{}`)
			require.Equal(t, http.StatusInternalServerError, resp.StatusCode)
			require.Zero(t, b.records(t))
		}
		require.EqualValues(t, 2, b.calls.Load())
	})

	t.Run("ConflictIsNotStored", func(t *testing.T) {
		t.Parallel()
		b := setupUnit(t)
		for range 2 {
			resp, _ := b.post(t, "/conflict", "k", `{}`)
			require.Equal(t, http.StatusConflict, resp.StatusCode)
			require.Empty(t, resp.Header.Get(ReplayedHeader))
		}
		require.Zero(t, b.records(t))
		require.EqualValues(t, 2, b.calls.Load())
	})

	t.Run("InProgressAnswersConflict", func(t *testing.T) {
		t.Parallel()
		b := setupUnit(t)
		done := make(chan string)
		go func() {
			resp, err := b.srv.Client().Post(b.srv.URL+"/slow", "application/json", strings.NewReader(`{}`))
			if err == nil {
				resp.Body.Close()
				done <- resp.Status
				return
			}
			done <- err.Error()
		}()
		// The first request has no key: it must not hold anything.
		<-b.entered
		require.Zero(t, b.records(t))
		b.release <- struct{}{}
		require.Equal(t, "201 Created", <-done)

		go func() {
			req, _ := http.NewRequest(http.MethodPost, b.srv.URL+"/slow", strings.NewReader(`{}`))
			req.Header.Set(Header, "k")
			resp, err := b.srv.Client().Do(req)
			if err == nil {
				resp.Body.Close()
				done <- resp.Status
				return
			}
			done <- err.Error()
		}()
		<-b.entered
		resp, body := b.post(t, "/slow", "k", `{}`)
		require.Equal(t, http.StatusConflict, resp.StatusCode)
		require.Contains(t, body, "in progress")
		resp, body = b.post(t, "/slow", "k", `{"other":1}`)
		require.Equal(t, http.StatusConflict, resp.StatusCode)
		require.Contains(t, body, "different request")
		b.release <- struct{}{}
		require.Equal(t, "201 Created", <-done)

		resp, body = b.post(t, "/slow", "k", `{}`)
		require.Equal(t, http.StatusCreated, resp.StatusCode)
		require.Equal(t, "true", resp.Header.Get(ReplayedHeader))
		require.JSONEq(t, `{"ok":"yes"}`, body)
		require.EqualValues(t, 2, b.calls.Load(), "the handler ran once per key")
	})

	t.Run("ExpiredLeaseIsTakenOver", func(t *testing.T) {
		t.Parallel()
		b := setupUnit(t)
		// A request lost with its process left its record in progress
		// (written directly: a live process never leaves one).
		_, err := b.pool.Exec(context.Background(),
			`INSERT INTO idempotency_key (id, workspace_id, principal_id, method, route, key_hash, fingerprint, state, expires_at)
			 VALUES ('idk_lost', 'ws_test', 'pri_test', 'POST', '/ok', $1, '\x00', 'in_progress', now() - interval '1 second')`,
			keyHash("k"))
		require.NoError(t, err)
		resp, body := b.post(t, "/ok", "k", `{}`)
		require.Equal(t, http.StatusCreated, resp.StatusCode)
		require.JSONEq(t, `{"n":1}`, body)
		var state string
		require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT state FROM idempotency_key").Scan(&state))
		require.Equal(t, "completed", state)
	})
}

func TestOperationsOfContract(t *testing.T) {
	t.Parallel()
	doc, err := openapi.Load()
	require.NoError(t, err)
	ops := operationsOf(doc)
	for _, want := range []string{
		"POST /api/v1/workspaces",
		"POST /api/v1/api-keys",
		"POST /api/v1/workspaces/:workspace_id/invitations",
		"POST /api/v1/organizations/:organization_id/invitations",
	} {
		require.True(t, ops[want], want)
	}
	require.False(t, ops["GET /api/v1/workspaces"])
	require.False(t, ops["POST /api/v1/api-keys/:api_key_id/revoke"])
}

func TestEchoRoute(t *testing.T) {
	t.Parallel()
	require.Equal(t, "/a/:x/b/:y", echoRoute("/a/{x}/b/{y}"))
	require.Equal(t, "/a", echoRoute("/a"))
}
