package httpapi_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/connection/composiotest"
)

// authorize starts an authorization of a connection and checks the create
// answer's headers.
func (b *connectionsBundle) authorize(t *testing.T, connectionID string, header ...string) map[string]any {
	t.Helper()
	status, op, hdr := b.do(t, http.MethodPost, "/api/v1/connections/"+connectionID+"/authorizations", nil, header...)
	require.Equal(t, http.StatusCreated, status, op)
	require.Equal(t, "/api/v1/connection-operations/"+op["id"].(string), hdr.Get("Location"))
	require.Equal(t, etag(op), hdr.Get("ETag"))
	return op
}

// operation reads an operation.
func (b *connectionsBundle) operation(t *testing.T, id string) map[string]any {
	t.Helper()
	status, op, hdr := b.do(t, http.MethodGet, "/api/v1/connection-operations/"+id, nil)
	require.Equal(t, http.StatusOK, status, op)
	require.Equal(t, etag(op), hdr.Get("ETag"))
	return op
}

// connection reads a connection.
func (b *connectionsBundle) connection(t *testing.T, id string) map[string]any {
	t.Helper()
	status, c, _ := b.do(t, http.MethodGet, "/api/v1/connections/"+id, nil)
	require.Equal(t, http.StatusOK, status, c)
	return c
}

// account returns the stand-in's connected account created for a user.
func (b *connectionsBundle) account(t *testing.T, userID string) composiotest.Account {
	t.Helper()
	for _, a := range b.composio.Accounts() {
		if a.UserID == userID {
			return a
		}
	}
	t.Fatalf("no connected account for %s at the stand-in", userID)
	return composiotest.Account{}
}

func TestConnectionAuthorizationSucceeds(t *testing.T) {
	t.Parallel()
	b := setupConnections(t)
	body := b.connectionBody("gh")
	body["config"] = map[string]any{"auth_config_id": "ac_oauth", "callback_url": "https://app.example.com/done"}
	c := b.createConnection(t, body)
	cid := c["id"].(string)

	before := time.Now()
	op := b.authorize(t, cid)
	require.Regexp(t, `^cop_[0-9a-z]{26}$`, op["id"])
	require.Equal(t, cid, op["connection_id"])
	require.Equal(t, "pending", op["status"])
	require.True(t, strings.HasPrefix(op["redirect_url"].(string), composiotest.RedirectBase), op["redirect_url"])
	require.Nil(t, op["error"])
	require.Nil(t, op["settled_at"])
	require.Equal(t, b.h.App.ReplicaID, op["owner"])
	require.Regexp(t, `^rep_[0-9a-z]{26}$`, op["owner"], "an opaque replica id, not the host name")
	require.Equal(t, b.admin.PrincipalID, op["created_by_id"])
	deadline, err := time.Parse(time.RFC3339Nano, op["deadline"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, before.Add(10*time.Minute), deadline, time.Minute)

	// The vendor was asked exactly as its protocol says: for the auth config,
	// filed under the connection's id, with the callback.
	require.Empty(t, b.composio.Problems())
	a := b.account(t, cid)
	require.Equal(t, "ac_oauth", a.AuthConfigID)
	require.Equal(t, "https://app.example.com/done", a.CallbackURL)
	require.Equal(t, a.RedirectURL, op["redirect_url"])

	// Reading it needs write, like starting it: the redirect URL is a capability.
	require.Equal(t, op, b.operation(t, op["id"].(string)))
	status, _, _ := b.do(t, http.MethodGet, "/api/v1/connection-operations/"+op["id"].(string), nil, "Authorization", "Bearer "+b.viewer.Token)
	require.Equal(t, http.StatusForbidden, status)
	status, _, _ = b.do(t, http.MethodPost, "/api/v1/connections/"+cid+"/authorizations", nil, "Authorization", "Bearer "+b.viewer.Token)
	require.Equal(t, http.StatusForbidden, status)

	// While the user has not consented, a drive pass changes nothing.
	require.NoError(t, b.h.App.Connections.Drive(t.Context()))
	require.Equal(t, "pending", b.operation(t, op["id"].(string))["status"])
	require.Equal(t, c, b.connection(t, cid))

	// The user consents; the owner's next pass settles it and the connection
	// gets the credential and its account.
	b.composio.Complete(a.ID)
	require.NoError(t, b.h.App.Connections.Drive(t.Context()))
	done := b.operation(t, op["id"].(string))
	require.Equal(t, "succeeded", done["status"])
	require.Nil(t, done["redirect_url"], "a settled operation's redirect URL is of no more use")
	require.Nil(t, done["error"])
	require.NotNil(t, done["settled_at"])
	got := b.connection(t, cid)
	require.Equal(t, true, got["credential_configured"])
	require.Equal(t, cid, got["account"], "filed under the connection's id")
	require.EqualValues(t, 2, got["version"])
	require.Equal(t, b.admin.PrincipalID, got["updated_by_id"], "the change is the starter's")
	require.JSONEq(t, `{"connected_account_id":"`+a.ID+`"}`, b.openCredential(t, cid))
	var actor, fieldsCSV string
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(),
		`SELECT actor_id, array_to_string(changed_fields, ',') FROM audit_event WHERE subject_id = $1 AND action = 'connection.authorized'`, cid).Scan(&actor, &fieldsCSV))
	require.Equal(t, b.admin.PrincipalID, actor)
	require.Equal(t, "account,credential", fieldsCSV)

	// Later passes find nothing to do.
	require.NoError(t, b.h.App.Connections.Drive(t.Context()))
	require.Equal(t, done, b.operation(t, op["id"].(string)))
	require.Equal(t, got, b.connection(t, cid))

	// An auth config that needs no consent (an API key scheme) succeeds at once,
	// under the connection's own account.
	body = b.connectionBody("serp")
	body["account"] = "team-7"
	body["config"] = map[string]any{"auth_config_id": "ac_apikey"}
	k := b.createConnection(t, body)
	op = b.authorize(t, k["id"].(string))
	require.Equal(t, "succeeded", op["status"])
	require.Nil(t, op["redirect_url"])
	require.Equal(t, true, b.connection(t, k["id"].(string))["credential_configured"])
	require.Equal(t, "team-7", b.account(t, "team-7").UserID)
	require.Equal(t, "team-7", b.connection(t, k["id"].(string))["account"])
	require.Empty(t, b.composio.Problems())
}

func TestConnectionAuthorizationFailures(t *testing.T) {
	t.Parallel()
	b := setupConnections(t)
	ctx := t.Context()

	// The user refuses: the operation fails, the connection is untouched.
	c := b.createConnection(t, b.connectionBody("refused"))
	op := b.authorize(t, c["id"].(string))
	b.composio.Fail(b.account(t, c["id"].(string)).ID)
	require.NoError(t, b.h.App.Connections.Drive(ctx))
	op = b.operation(t, op["id"].(string))
	require.Equal(t, "failed", op["status"])
	require.Equal(t, "Composio reports that the authorization failed", op["error"])
	require.Equal(t, c, b.connection(t, c["id"].(string)))

	// Composio expires it: expired.
	c = b.createConnection(t, b.connectionBody("late"))
	op = b.authorize(t, c["id"].(string))
	b.composio.Expire(b.account(t, c["id"].(string)).ID)
	require.NoError(t, b.h.App.Connections.Drive(ctx))
	require.Equal(t, "expired", b.operation(t, op["id"].(string))["status"])

	// A server error while checking is transient: still pending, and the next
	// pass completes it.
	c = b.createConnection(t, b.connectionBody("flaky"))
	op = b.authorize(t, c["id"].(string))
	b.composio.Complete(b.account(t, c["id"].(string)).ID)
	b.composio.FailNext(1000, http.StatusBadGateway) // also what the process's own driver asks meanwhile
	require.NoError(t, b.h.App.Connections.Drive(ctx))
	require.Equal(t, "pending", b.operation(t, op["id"].(string))["status"])
	b.composio.FailNext(0, 0)
	require.NoError(t, b.h.App.Connections.Drive(ctx))
	require.Equal(t, "succeeded", b.operation(t, op["id"].(string))["status"])

	// An auth config Composio does not know: the start answers the failed
	// operation, saying what to check without Composio's answer.
	body := b.connectionBody("unknown")
	body["config"] = map[string]any{"auth_config_id": "ac_nope"}
	c = b.createConnection(t, body)
	op = b.authorize(t, c["id"].(string))
	require.Equal(t, "failed", op["status"])
	require.Contains(t, op["error"], "auth_config_id")
	require.NotContains(t, op["error"], "Auth config not found")

	// A rotated project key: failed, naming the HTTP status and not the key.
	p := b.provider
	status, p, _ := b.do(t, http.MethodPatch, "/api/v1/connector-providers/"+p["id"].(string), map[string]any{"credential": map[string]any{"api_key": "sk-test-WRONG-0000"}}, "If-Match", etag(p))
	require.Equal(t, http.StatusOK, status, p)
	c = b.createConnection(t, b.connectionBody("rotated"))
	op = b.authorize(t, c["id"].(string))
	require.Equal(t, "failed", op["status"])
	require.Equal(t, "Composio refused the provider's API key (HTTP 401)", op["error"])
	status, p, _ = b.do(t, http.MethodPatch, "/api/v1/connector-providers/"+p["id"].(string), map[string]any{"credential": map[string]any{"api_key": secretKey}}, "If-Match", etag(p))
	require.Equal(t, http.StatusOK, status, p)

	// A disabled connection, and a disabled provider: 409 disabled, no vendor call.
	calls := b.composio.Requests()
	status, off, _ := b.do(t, http.MethodPatch, "/api/v1/connections/"+c["id"].(string), map[string]any{"enabled": false}, "If-Match", etag(c))
	require.Equal(t, http.StatusOK, status, off)
	status, out, _ := b.do(t, http.MethodPost, "/api/v1/connections/"+c["id"].(string)+"/authorizations", nil)
	require.Equal(t, http.StatusConflict, status, out)
	require.Equal(t, "disabled", out["error"].(map[string]any)["code"])
	c = b.createConnection(t, b.connectionBody("provider off"))
	status, p, _ = b.do(t, http.MethodPatch, "/api/v1/connector-providers/"+p["id"].(string), map[string]any{"enabled": false}, "If-Match", etag(p))
	require.Equal(t, http.StatusOK, status, p)
	status, out, _ = b.do(t, http.MethodPost, "/api/v1/connections/"+c["id"].(string)+"/authorizations", nil)
	require.Equal(t, http.StatusConflict, status, out)
	require.Equal(t, "disabled", out["error"].(map[string]any)["code"])
	require.Equal(t, calls, b.composio.Requests())
	b.assertNoConnectionLeak(t)
}

func TestConnectionAuthorizationSupersedeRevokeReplay(t *testing.T) {
	t.Parallel()
	b := setupConnections(t)
	c := b.createConnection(t, b.connectionBody("gh"))
	cid := c["id"].(string)

	// A second start supersedes the first, which can no longer succeed.
	first := b.authorize(t, cid)
	firstAccount := b.account(t, cid).ID
	second := b.authorize(t, cid)
	got := b.operation(t, first["id"].(string))
	require.Equal(t, "failed", got["status"])
	require.Equal(t, "superseded by authorization "+second["id"].(string), got["error"])
	require.Equal(t, "pending", b.operation(t, second["id"].(string))["status"])
	b.composio.Complete(firstAccount)
	require.NoError(t, b.h.App.Connections.Drive(t.Context()))
	require.Equal(t, false, b.connection(t, cid)["credential_configured"], "the superseded operation's consent is not used")

	// Revoke fails the pending one: consent given afterwards brings no credential back.
	status, r, _ := b.do(t, http.MethodPost, "/api/v1/connections/"+cid+"/revoke", nil, "If-Match", etag(c))
	require.Equal(t, http.StatusOK, status, r)
	require.Equal(t, c, r, "no credential to remove: the connection keeps its version")
	got = b.operation(t, second["id"].(string))
	require.Equal(t, "failed", got["status"])
	require.Equal(t, "the connection was revoked before the authorization completed", got["error"])
	for _, a := range b.composio.Accounts() {
		b.composio.Complete(a.ID)
	}
	require.NoError(t, b.h.App.Connections.Drive(t.Context()))
	require.Equal(t, false, b.connection(t, cid)["credential_configured"])

	// A config change fails the pending one too: it was begun with the old config.
	pending := b.authorize(t, cid)
	status, c, _ = b.do(t, http.MethodPatch, "/api/v1/connections/"+cid, map[string]any{"config": map[string]any{"auth_config_id": "ac_apikey"}}, "If-Match", etag(c))
	require.Equal(t, http.StatusOK, status, c)
	got = b.operation(t, pending["id"].(string))
	require.Equal(t, "failed", got["status"])
	require.Equal(t, "the connection's config changed before the authorization completed", got["error"])
	status, c, _ = b.do(t, http.MethodPatch, "/api/v1/connections/"+cid, map[string]any{"config": map[string]any{"auth_config_id": "ac_oauth"}}, "If-Match", etag(c))
	require.Equal(t, http.StatusOK, status, c)

	// The same Idempotency-Key replays the first answer without a second vendor call.
	accounts := len(b.composio.Accounts())
	op := b.authorize(t, cid, "Idempotency-Key", "auth-1")
	status, again, hdr := b.do(t, http.MethodPost, "/api/v1/connections/"+cid+"/authorizations", nil, "Idempotency-Key", "auth-1")
	require.Equal(t, http.StatusCreated, status, again)
	require.Equal(t, "true", hdr.Get("Idempotent-Replayed"))
	require.Equal(t, op["id"], again["id"])
	require.Len(t, b.composio.Accounts(), accounts+1)

	// Once authorized, revoking removes the credential the authorization stored.
	for _, a := range b.composio.Accounts() {
		if a.UserID == cid && a.Status != "ACTIVE" {
			b.composio.Complete(a.ID)
		}
	}
	require.NoError(t, b.h.App.Connections.Drive(t.Context()))
	require.Equal(t, "succeeded", b.operation(t, op["id"].(string))["status"])
	c = b.connection(t, cid)
	require.Equal(t, true, c["credential_configured"])
	status, r, _ = b.do(t, http.MethodPost, "/api/v1/connections/"+cid+"/revoke", nil, "If-Match", etag(c))
	require.Equal(t, http.StatusOK, status, r)
	require.Equal(t, false, r["credential_configured"])
	require.Equal(t, c["version"].(float64)+1, r["version"])
	b.assertNoConnectionLeak(t)
}

func TestConnectionAuthorizationConcurrentStarts(t *testing.T) {
	t.Parallel()
	b := setupConnections(t)
	cid := b.createConnection(t, b.connectionBody("gh"))["id"].(string)

	// Starts at once (a double click): each one supersedes the one before it,
	// none collides, and exactly one stays pending.
	const n = 4
	statuses := make([]int, n)
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			status, op, _ := b.do(t, http.MethodPost, "/api/v1/connections/"+cid+"/authorizations", nil)
			statuses[i] = status
			if id, ok := op["id"].(string); ok {
				ids[i] = id
			}
		})
	}
	wg.Wait()
	pending := 0
	for i := range n {
		require.Equal(t, http.StatusCreated, statuses[i])
		if b.operation(t, ids[i])["status"] == "pending" {
			pending++
		}
	}
	require.Equal(t, 1, pending)
}

func TestConnectionAuthorizationOfADisabledConnectionFails(t *testing.T) {
	t.Parallel()
	b := setupConnections(t)
	c := b.createConnection(t, b.connectionBody("gh"))
	cid := c["id"].(string)
	op := b.authorize(t, cid)
	status, out, _ := b.do(t, http.MethodPatch, "/api/v1/connections/"+cid, map[string]any{"enabled": false}, "If-Match", etag(c))
	require.Equal(t, http.StatusOK, status, out)

	// The user consents afterwards: the disabled connection gets no credential.
	b.composio.Complete(b.account(t, cid).ID)
	require.NoError(t, b.h.App.Connections.Drive(t.Context()))
	got := b.operation(t, op["id"].(string))
	require.Equal(t, "failed", got["status"])
	require.Equal(t, "the connection was disabled before the authorization completed", got["error"])
	require.Equal(t, false, b.connection(t, cid)["credential_configured"])
}
