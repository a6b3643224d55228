package ratelimit_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apitest"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/ratelimit"
	"github.com/svcdev/svc/internal/testfactory"
)

// start runs a process with a per-key API limit and a Redis key prefix of its own.
func start(t *testing.T, perMinute int, redisURL string) (*apitest.Harness, testfactory.Admin) {
	t.Helper()
	h := apitest.Start(t, apitest.Options{Configure: func(c *config.Config) {
		c.Limits.APIRequestsPerKeyPerMinute = perMinute
		c.Redis.KeyPrefix = "svc-test-" + strings.ToLower(ulid.Make().String()) + ":"
		if redisURL != "" {
			c.Redis.URL = redisURL
		}
	}})
	return h, testfactory.Bootstrap(t, h.App.Pool)
}

func me(t *testing.T, h *apitest.Harness, token string) *http.Response {
	t.Helper()
	return h.Do(t, http.MethodGet, "/api/v1/me", nil, "Authorization", "Bearer "+token)
}

func TestAPIKeyRateLimit(t *testing.T) {
	t.Parallel()
	h, admin := start(t, 3, "")
	for i := range 3 {
		require.Equal(t, http.StatusOK, me(t, h, admin.APIKey).StatusCode, "request %d", i+1)
	}
	resp := me(t, h, admin.APIKey)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	retry, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	require.NoError(t, err)
	require.True(t, retry >= 1 && retry <= 60, "Retry-After %d", retry)
	var body struct {
		Error struct {
			Code, Message, RequestID string
		} `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, "rate_limited", body.Error.Code)
	require.NotEmpty(t, body.Error.Message)

	// The limit is per key: another key of the same principal is not affected.
	other := testfactory.AddMember(t, h.App.Pool, admin.OrganizationID, admin.WorkspaceID, testfactory.MemberOpts{WorkspaceRole: "viewer"})
	require.Equal(t, http.StatusOK, me(t, h, other.Token).StatusCode)

	// Unauthenticated requests are not counted against anyone's key.
	require.Equal(t, http.StatusUnauthorized, me(t, h, "svc_nope").StatusCode)
	require.NotContains(t, h.Logs.String(), admin.APIKey)
}

func TestAPIKeyRateLimitOff(t *testing.T) {
	t.Parallel()
	h, admin := start(t, 0, "")
	for range 20 {
		require.Equal(t, http.StatusOK, me(t, h, admin.APIKey).StatusCode)
	}
}

// TestRedisOutageLiftsTheLimit: while Redis is lost, requests go through
// without limits, and the limit returns with Redis.
func TestRedisOutageLiftsTheLimit(t *testing.T) {
	t.Parallel()
	proxy, url := apitest.ProxyURL(t, apitest.RedisURL(t))
	h, admin := start(t, 2, url)
	require.Equal(t, http.StatusOK, me(t, h, admin.APIKey).StatusCode)
	require.Equal(t, http.StatusOK, me(t, h, admin.APIKey).StatusCode)
	require.Equal(t, http.StatusTooManyRequests, me(t, h, admin.APIKey).StatusCode)

	proxy.Cut()
	time.Sleep(ratelimit.DenialMemory) // the process remembers the refusal that long
	start := time.Now()
	for range 10 {
		require.Equal(t, http.StatusOK, me(t, h, admin.APIKey).StatusCode, "no limits without Redis")
	}
	require.Less(t, time.Since(start), 5*time.Second, "an outage does not slow requests down")
	require.Contains(t, h.Logs.String(), "rate limit not enforced")

	proxy.Restore()
	deadline := time.Now().Add(10 * time.Second)
	for me(t, h, admin.APIKey).StatusCode != http.StatusTooManyRequests {
		require.True(t, time.Now().Before(deadline), "the limit is enforced again once Redis is back")
		time.Sleep(100 * time.Millisecond)
	}
}
