package httpapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/config"
)

const (
	appOrigin   = "https://app.example.com"
	otherOrigin = "https://evil.example.net"
)

// preflight sends the OPTIONS a browser sends before a cross-origin request.
func preflight(t *testing.T, b *providersBundle, path, origin, method, headers string) *http.Response {
	t.Helper()
	h := []string{"Origin", origin, "Access-Control-Request-Method", method}
	if headers != "" {
		h = append(h, "Access-Control-Request-Headers", headers)
	}
	resp := b.h.Do(t, http.MethodOptions, path, nil, h...)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Empty(t, body)
	return resp
}

// A listed origin's preflight is answered before authentication (it carries
// no key), with the origin itself, the route's methods and the headers the
// API reads and the browser asked for; its requests' answers, errors
// included, name it and expose the documented headers. Credentials are never
// allowed, and a key's rate limit is not spent on preflights.
func TestCORSAllowsListedOrigins(t *testing.T) {
	t.Parallel()
	b := setupProvidersWith(t, func(cfg *config.Config) {
		cfg.Server.CORSAllowedOrigins = []string{appOrigin, "http://localhost:3000"}
		cfg.Limits.APIRequestsPerKeyPerMinute = 2
	})

	for range 5 {
		resp := preflight(t, b, "/api/v1/agents", appOrigin, http.MethodPost, "content-type, idempotency-key, x-trace-id")
		require.Equal(t, http.StatusNoContent, resp.StatusCode)
		require.Equal(t, appOrigin, resp.Header.Get("Access-Control-Allow-Origin"))
		require.Equal(t, "OPTIONS, GET, POST", resp.Header.Get("Access-Control-Allow-Methods"))
		require.Equal(t, "Authorization, Content-Type, If-Match, Idempotency-Key, Last-Event-ID, X-Request-Id, x-trace-id",
			resp.Header.Get("Access-Control-Allow-Headers"))
		require.Equal(t, "3600", resp.Header.Get("Access-Control-Max-Age"))
		require.Contains(t, resp.Header.Values("Vary"), "Origin")
		require.Empty(t, resp.Header.Get("Access-Control-Allow-Credentials"))
	}
	resp := preflight(t, b, "/api/v1/agents/ag_x", "http://localhost:3000", http.MethodPatch, "")
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Equal(t, "http://localhost:3000", resp.Header.Get("Access-Control-Allow-Origin"))
	require.Contains(t, resp.Header.Get("Access-Control-Allow-Methods"), "PATCH")

	// The actual requests: the preflights spent none of the key's two.
	status, out, hdr := b.do(t, http.MethodPost, "/api/v1/memories", map[string]any{"name": "notes", "kind": "builtin"}, "Origin", appOrigin)
	require.Equal(t, http.StatusCreated, status, out)
	require.Equal(t, appOrigin, hdr.Get("Access-Control-Allow-Origin"))
	require.Contains(t, hdr.Values("Vary"), "Origin")
	exposed := strings.Split(hdr.Get("Access-Control-Expose-Headers"), ", ")
	for _, h := range []string{"ETag", "Location", "Retry-After", "X-Request-Id", "Content-Range"} {
		require.Contains(t, exposed, h)
	}
	require.Empty(t, hdr.Get("Access-Control-Allow-Credentials"))
	status, out, hdr = b.do(t, http.MethodGet, "/api/v1/memories", nil, "Origin", appOrigin)
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, appOrigin, hdr.Get("Access-Control-Allow-Origin"))
	status, _, hdr = b.do(t, http.MethodGet, "/api/v1/memories", nil, "Authorization", "Bearer svc_wrong", "Origin", appOrigin)
	require.Equal(t, http.StatusUnauthorized, status)
	require.Equal(t, appOrigin, hdr.Get("Access-Control-Allow-Origin"), "a browser page can read the refusal")
	status, _, hdr = b.do(t, http.MethodGet, "/api/v1/memories", nil, "Origin", appOrigin)
	require.Equal(t, http.StatusTooManyRequests, status, "the third request with the key")
	require.Equal(t, appOrigin, hdr.Get("Access-Control-Allow-Origin"))
	require.NotEmpty(t, hdr.Get("Retry-After"))
}

// Origins that are not listed get no CORS header: their preflight is a bare
// 204 with Allow, which a browser takes as a refusal, and their requests'
// answers name no origin. Without any listed origin, no answer varies by
// Origin at all.
func TestCORSIgnoresOtherOrigins(t *testing.T) {
	t.Parallel()
	b := setupProvidersWith(t, func(cfg *config.Config) { cfg.Server.CORSAllowedOrigins = []string{appOrigin} })
	resp := preflight(t, b, "/api/v1/agents", otherOrigin, http.MethodPost, "authorization")
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Equal(t, "OPTIONS, GET, POST", resp.Header.Get("Allow"))
	for name := range resp.Header {
		require.False(t, strings.HasPrefix(name, "Access-Control-"), "header %s", name)
	}
	for _, origin := range []string{otherOrigin, "https://app.example.com.evil.net", "null"} {
		status, out, hdr := b.do(t, http.MethodGet, "/api/v1/memories", nil, "Origin", origin)
		require.Equal(t, http.StatusOK, status, out)
		require.Empty(t, hdr.Get("Access-Control-Allow-Origin"), origin)
		require.Empty(t, hdr.Get("Access-Control-Expose-Headers"), origin)
	}

	plain := setupProvidersWith(t, func(*config.Config) {})
	resp = preflight(t, plain, "/api/v1/agents", appOrigin, http.MethodPost, "")
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))
	status, out, hdr := plain.do(t, http.MethodGet, "/api/v1/memories", nil, "Origin", appOrigin)
	require.Equal(t, http.StatusOK, status, out)
	require.Empty(t, hdr.Get("Access-Control-Allow-Origin"))
	require.Empty(t, hdr.Values("Vary"))
}

// A method a route does not have is 405 with Allow naming the route's
// methods, on API routes as on the probes; OPTIONS is answered 204 with the
// same Allow, and an unknown path stays 404.
func TestMethodNotAllowedNamesTheRoutesMethods(t *testing.T) {
	t.Parallel()
	b := setupProvidersWith(t, func(*config.Config) {})
	cases := []struct{ method, path, allow string }{
		{http.MethodDelete, "/api/v1/agents", "OPTIONS, GET, POST"},
		{http.MethodPut, "/api/v1/agents/ag_x", "OPTIONS, GET, PATCH"},
		{http.MethodGet, "/api/v1/deliveries/dl_x/redeliver", "OPTIONS, POST"},
		{http.MethodPost, "/healthz", "OPTIONS, GET"},
	}
	for _, c := range cases {
		status, out, hdr := b.do(t, c.method, c.path, nil)
		require.Equal(t, http.StatusMethodNotAllowed, status, "%s %s: %v", c.method, c.path, out)
		require.Equal(t, "method_not_allowed", errorCode(t, out))
		require.Equal(t, c.allow, hdr.Get("Allow"), "%s %s", c.method, c.path)
		resp := b.h.Do(t, http.MethodOptions, c.path, nil)
		require.Equal(t, http.StatusNoContent, resp.StatusCode, c.path)
		require.Equal(t, c.allow, resp.Header.Get("Allow"), c.path)
	}
	status, _, _ := b.do(t, http.MethodOptions, "/api/v1/nothing-here", nil)
	require.Equal(t, http.StatusNotFound, status)
}
