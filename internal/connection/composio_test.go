package connection_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/connection"
	"github.com/svcdev/svc/internal/connection/composiotest"
	"github.com/svcdev/svc/internal/endpoint"
)

const testKey = "sk-composio-test-7f3a9c"

// client returns a Composio authorizer whose calls pass an endpoint policy
// that allows the local servers, as an operator allows a vendor on its own
// network.
func client(t *testing.T, servers ...string) *connection.Composio {
	t.Helper()
	cfg := config.EndpointPolicy{AllowHTTP: true, AllowedPrefixes: []string{"127.0.0.0/8"}, AllowedPorts: []int{}}
	for _, s := range servers {
		u, err := url.Parse(s)
		require.NoError(t, err)
		port, err := strconv.Atoi(u.Port())
		require.NoError(t, err)
		cfg.AllowedPorts = append(cfg.AllowedPorts, port)
	}
	policy, err := endpoint.NewPolicy(cfg)
	require.NoError(t, err)
	return connection.NewComposio(policy.HTTPClient(5*time.Second), 5*time.Second)
}

func request(srv *composiotest.Server, authConfig string) connection.Request {
	return connection.Request{
		ProviderConfig:     map[string]any{"base_url": srv.URL + "/"},
		ProviderCredential: map[string]any{"api_key": testKey},
		Config:             map[string]any{"auth_config_id": authConfig, "callback_url": "https://app.example.com/back"},
		UserID:             "con_01jd5v6w1q3yb8j8y3tn9z2k7h",
	}
}

func TestComposioBeginAndCheck(t *testing.T) {
	t.Parallel()
	srv := composiotest.Start(t, testKey)
	c := client(t, srv.URL)
	ctx := t.Context()

	p, err := c.Begin(ctx, request(srv, "ac_oauth"))
	require.NoError(t, err)
	require.Empty(t, srv.Problems())
	require.Equal(t, connection.StatusPending, p.Status)
	require.True(t, strings.HasPrefix(p.RedirectURL, composiotest.RedirectBase), p.RedirectURL)
	accounts := srv.Accounts()
	require.Len(t, accounts, 1)
	a := accounts[0]
	require.Equal(t, "con_01jd5v6w1q3yb8j8y3tn9z2k7h", a.UserID)
	require.Equal(t, "https://app.example.com/back", a.CallbackURL)
	require.Equal(t, map[string]any{"connected_account_id": a.ID, "user_id": a.UserID}, p.VendorState)

	p, err = c.Check(ctx, request(srv, "ac_oauth"), p.VendorState)
	require.NoError(t, err)
	require.Equal(t, connection.StatusPending, p.Status)

	srv.Complete(a.ID)
	p, err = c.Check(ctx, request(srv, "ac_oauth"), p.VendorState)
	require.NoError(t, err)
	require.Equal(t, connection.StatusSucceeded, p.Status)
	require.Equal(t, map[string]any{"connected_account_id": a.ID}, p.Credential)
	require.Equal(t, a.UserID, p.Account)

	for status, want := range map[string]connection.Status{"FAILED": connection.StatusFailed, "EXPIRED": connection.StatusExpired} {
		q, err := c.Begin(ctx, request(srv, "ac_oauth"))
		require.NoError(t, err)
		id := q.VendorState["connected_account_id"].(string)
		if status == "FAILED" {
			srv.Fail(id)
		} else {
			srv.Expire(id)
		}
		q, err = c.Check(ctx, request(srv, "ac_oauth"), q.VendorState)
		require.NoError(t, err)
		require.Equal(t, want, q.Status)
		require.NotEmpty(t, q.Message)
	}

	// An API key auth config is connected at once.
	p, err = c.Begin(ctx, request(srv, "ac_apikey"))
	require.NoError(t, err)
	require.Equal(t, connection.StatusSucceeded, p.Status)
	require.Empty(t, p.RedirectURL)
	require.Empty(t, srv.Problems())
}

func TestComposioFailures(t *testing.T) {
	t.Parallel()
	srv := composiotest.Start(t, testKey)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(other.Close)
	c := client(t, srv.URL, other.URL)
	ctx := t.Context()
	vendorErr := func(err error) *connection.VendorError {
		t.Helper()
		var ve *connection.VendorError
		require.True(t, errors.As(err, &ve), "%v", err)
		require.NotContains(t, ve.Msg, testKey)
		require.NotContains(t, ve.Msg, srv.URL)
		return ve
	}

	// A wrong key is refused for good.
	r := request(srv, "ac_oauth")
	r.ProviderCredential = map[string]any{"api_key": "sk-wrong"}
	_, err := c.Begin(ctx, r)
	ve := vendorErr(err)
	require.False(t, ve.Transient)
	require.Equal(t, "Composio refused the provider's API key (HTTP 401)", ve.Msg)

	// A server error or rate limiting is worth retrying.
	for _, status := range []int{http.StatusInternalServerError, http.StatusTooManyRequests} {
		srv.FailNext(1, status)
		_, err = c.Begin(ctx, request(srv, "ac_oauth"))
		require.True(t, vendorErr(err).Transient, status)
	}

	// An unknown auth config, and an unknown account when checking.
	_, err = c.Begin(ctx, request(srv, "ac_nope"))
	require.Contains(t, vendorErr(err).Msg, "auth_config_id")
	_, err = c.Check(ctx, request(srv, "ac_oauth"), map[string]any{"connected_account_id": "ca_unknown", "user_id": "u"})
	require.Equal(t, "Composio no longer knows the connected account being authorized (HTTP 404)", vendorErr(err).Msg)

	// State that is not Composio's is a failure, not a call.
	calls := srv.Requests()
	p, err := c.Check(ctx, request(srv, "ac_oauth"), map[string]any{"connected_account_id": "../../admin"})
	require.NoError(t, err)
	require.Equal(t, connection.StatusFailed, p.Status)
	require.Equal(t, calls, srv.Requests())

	// A base URL that is not Composio (any JSON page) does not pass for it.
	r = request(srv, "ac_oauth")
	r.ProviderConfig = map[string]any{"base_url": other.URL}
	_, err = c.Begin(ctx, r)
	require.Equal(t, "Composio's answer names no connected account; check the provider's base URL", vendorErr(err).Msg)

	// The endpoint policy applies to every call: a loopback address the
	// operator did not allow is refused, and that is not worth retrying.
	strict, err := endpoint.NewPolicy(config.EndpointPolicy{AllowedPrefixes: []string{}, AllowedPorts: []int{}})
	require.NoError(t, err)
	_, err = connection.NewComposio(strict.HTTPClient(time.Second), time.Second).Begin(ctx, request(srv, "ac_oauth"))
	ve = vendorErr(err)
	require.False(t, ve.Transient)
	require.Regexp(t, `^the call was refused by the endpoint policy: .*endpoint_policy\.allowed_prefixes`, ve.Msg)
}

// TestComposioRedirects: only an absolute https redirect is handed to a user.
func TestComposioRedirects(t *testing.T) {
	t.Parallel()
	for redirect, ok := range map[string]bool{
		"https://connect.composio.dev/link/lk_1": true,
		"http://connect.composio.dev/link/lk_1":  false,
		"javascript:alert(1)":                    false,
		"https://user:pw@evil.example/":          false,
		"https://evil.example/\r\nX: y":          false,
		"/relative":                              false,
		"":                                       false,
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"id":"ca_1","status":"INITIATED","redirect_url":` + quote(redirect) + `}`))
		}))
		r := connection.Request{ProviderConfig: map[string]any{"base_url": srv.URL}, ProviderCredential: map[string]any{"api_key": testKey},
			Config: map[string]any{"auth_config_id": "ac_1"}, UserID: "u"}
		p, err := client(t, srv.URL).Begin(t.Context(), r)
		srv.Close()
		require.NoError(t, err)
		if ok {
			require.Equal(t, connection.StatusPending, p.Status, redirect)
			require.Equal(t, redirect, p.RedirectURL)
		} else {
			require.Equal(t, connection.StatusFailed, p.Status, redirect)
		}
	}
}

func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\r", `\r`, "\n", `\n`).Replace(s) + `"`
}
