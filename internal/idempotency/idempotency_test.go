package idempotency_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/client"
	"github.com/svcdev/svc/internal/apitest"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/idempotency"
	"github.com/svcdev/svc/internal/testfactory"
)

// testBundle is a running process on a bootstrapped database.
type testBundle struct {
	h     *apitest.Harness
	admin testfactory.Admin
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	h := apitest.Start(t, apitest.Options{})
	return &testBundle{h: h, admin: testfactory.Bootstrap(t, h.App.Pool)}
}

func (b *testBundle) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), sql, args...).Scan(&n))
	return n
}

// createKey creates an API key named name with token as the caller and key as
// Idempotency-Key ("" for none).
func (b *testBundle) createKey(t *testing.T, token, key, name string) *client.CreateAPIKeyResponse {
	t.Helper()
	params := &client.CreateAPIKeyParams{}
	if key != "" {
		params.IdempotencyKey = &key
	}
	resp, err := b.h.Client(t, token).CreateAPIKeyWithResponse(t.Context(), params,
		client.CreateAPIKeyRequest{Name: name, Role: client.WorkspaceRoleRunner})
	require.NoError(t, err)
	return resp
}

func errorBody(t *testing.T, body []byte) (code, message, requestID string) {
	t.Helper()
	var e struct {
		Error struct {
			Code      string `json:"code"`
			Message   string `json:"message"`
			RequestID string `json:"request_id"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(body, &e), string(body))
	return e.Error.Code, e.Error.Message, e.Error.RequestID
}

func TestReplayAnswersTheFirstResponse(t *testing.T) {
	t.Parallel()
	b := setup(t)

	first := b.createKey(t, b.admin.APIKey, "retry-1", "ci")
	require.Equal(t, http.StatusCreated, first.StatusCode(), string(first.Body))
	require.Empty(t, first.HTTPResponse.Header.Get(idempotency.ReplayedHeader))
	token := first.JSON201.Token
	audits := b.count(t, "SELECT count(*) FROM audit_event")

	again := b.createKey(t, b.admin.APIKey, "retry-1", "ci")
	require.Equal(t, http.StatusCreated, again.StatusCode())
	require.Equal(t, "true", again.HTTPResponse.Header.Get(idempotency.ReplayedHeader))
	require.Equal(t, string(first.Body), string(again.Body), "the same body, token included")
	require.Equal(t, token, again.JSON201.Token)
	for _, h := range []string{"Location", "ETag", "Content-Type"} {
		require.Equal(t, first.HTTPResponse.Header.Get(h), again.HTTPResponse.Header.Get(h), h)
	}
	require.NotEqual(t, first.HTTPResponse.Header.Get("X-Request-Id"), again.HTTPResponse.Header.Get("X-Request-Id"))
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM api_key WHERE name = 'ci'"), "the replay created nothing")
	require.Equal(t, audits, b.count(t, "SELECT count(*) FROM audit_event"), "nor recorded anything")

	// The same body with another key, or with none, creates again.
	require.Equal(t, http.StatusCreated, b.createKey(t, b.admin.APIKey, "retry-2", "ci").StatusCode())
	require.Equal(t, http.StatusCreated, b.createKey(t, b.admin.APIKey, "", "ci").StatusCode())
	require.Equal(t, http.StatusCreated, b.createKey(t, b.admin.APIKey, "", "ci").StatusCode())
	require.Equal(t, 4, b.count(t, "SELECT count(*) FROM api_key WHERE name = 'ci'"))

	// Nothing holds the token in clear, and the logs never show it.
	var sealed []byte
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(),
		"SELECT response FROM idempotency_key WHERE status = 201 ORDER BY created_at LIMIT 1").Scan(&sealed))
	require.NotEmpty(t, sealed)
	require.NotContains(t, string(sealed), token)
	require.NotContains(t, string(sealed), token[4:])
	require.Zero(t, b.count(t, "SELECT count(*) FROM idempotency_key WHERE position(convert_to('retry-1', 'UTF8') in key_hash) > 0"))
	require.NotContains(t, b.h.Logs.String(), token)
	require.NotContains(t, b.h.Logs.String(), token[4:])
}

func TestDifferentRequestWithTheSameKeyIsAConflict(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.Equal(t, http.StatusCreated, b.createKey(t, b.admin.APIKey, "k", "ci").StatusCode())

	other := b.createKey(t, b.admin.APIKey, "k", "deploy")
	require.Equal(t, http.StatusConflict, other.StatusCode())
	code, msg, _ := errorBody(t, other.Body)
	require.Equal(t, "conflict", code)
	require.Equal(t, "this Idempotency-Key was used with a different request", msg)
	require.Zero(t, b.count(t, "SELECT count(*) FROM api_key WHERE name = 'deploy'"))

	// The same key on another operation is another key.
	resp, err := b.h.Client(t, b.admin.APIKey).CreateWorkspaceWithResponse(t.Context(),
		&client.CreateWorkspaceParams{IdempotencyKey: ptr("k")}, client.CreateWorkspaceRequest{Name: "Research"})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, resp.StatusCode(), string(resp.Body))
}

func TestKeysAreScopedToPrincipalAndWorkspace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.createKey(t, b.admin.APIKey, "k", "ci")
	require.Equal(t, http.StatusCreated, first.StatusCode())

	// Another admin of the same workspace: independent.
	other := testfactory.AddMember(t, b.h.App.Pool, b.admin.OrganizationID, b.admin.WorkspaceID,
		testfactory.MemberOpts{WorkspaceRole: "admin", OrganizationRole: "admin"})
	second := b.createKey(t, other.Token, "k", "ci")
	require.Equal(t, http.StatusCreated, second.StatusCode())
	require.Empty(t, second.HTTPResponse.Header.Get(idempotency.ReplayedHeader))
	require.NotEqual(t, first.JSON201.Token, second.JSON201.Token)

	// The same principal in another workspace: independent.
	ws, err := b.h.Client(t, b.admin.APIKey).CreateWorkspaceWithResponse(t.Context(), nil, client.CreateWorkspaceRequest{Name: "Two"})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, ws.StatusCode())
	third := b.createKey(t, ws.JSON201.ApiKey, "k", "ci")
	require.Equal(t, http.StatusCreated, third.StatusCode())
	require.Empty(t, third.HTTPResponse.Header.Get(idempotency.ReplayedHeader))
	require.Equal(t, ws.JSON201.Workspace.Id, third.JSON201.ApiKey.WorkspaceId)

	// Another key of the same principal and workspace shares the scope.
	sameKey := b.createKey(t, third.JSON201.Token, "k", "ci")
	require.Equal(t, http.StatusForbidden, sameKey.StatusCode(), "a runner key may not create keys: refused before idempotency")
	require.Equal(t, 3, b.count(t, "SELECT count(*) FROM api_key WHERE name = 'ci'"))
}

func TestConcurrentIdenticalRequestsCreateOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 8
	body := `{"name":"race","role":"runner"}`
	type result struct {
		status   int
		replayed bool
		body     []byte
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			req, err := http.NewRequest(http.MethodPost, b.h.URL+"/api/v1/api-keys", strings.NewReader(body))
			if err != nil {
				return
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+b.admin.APIKey)
			req.Header.Set(idempotency.Header, "race-key")
			resp, err := b.h.HTTP.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			out, _ := io.ReadAll(resp.Body)
			results[i] = result{resp.StatusCode, resp.Header.Get(idempotency.ReplayedHeader) == "true", out}
		})
	}
	close(start)
	wg.Wait()

	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM api_key WHERE name = 'race'"), "exactly one key was created")
	var created []byte
	for _, r := range results {
		if r.status == http.StatusCreated && !r.replayed {
			require.Nil(t, created, "only one request ran")
			created = r.body
		}
	}
	require.NotNil(t, created)
	for _, r := range results {
		switch {
		case r.status == http.StatusCreated:
			require.Equal(t, string(created), string(r.body))
		case r.status == http.StatusConflict:
			code, msg, _ := errorBody(t, r.body)
			require.Equal(t, "conflict", code)
			require.Equal(t, "a request with this Idempotency-Key is in progress", msg)
		default:
			t.Fatalf("unexpected answer %d: %s", r.status, r.body)
		}
	}
}

func TestClientErrorsAreReplayedButConflictsAreNot(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.h.Client(t, b.admin.APIKey)
	invite := func(ws, key, email string) *client.CreateWorkspaceInvitationResponse {
		t.Helper()
		resp, err := c.CreateWorkspaceInvitationWithResponse(t.Context(), ws,
			&client.CreateWorkspaceInvitationParams{IdempotencyKey: &key}, client.CreateInvitationRequest{Email: email, Role: "viewer"})
		require.NoError(t, err)
		return resp
	}

	// A 404 from the handler is the answer for the key: replayed, with the
	// replay's own request id in the body.
	absent := id.New(id.Workspace)
	first := invite(absent, "k404", "a@example.com")
	require.Equal(t, http.StatusNotFound, first.StatusCode())
	again := invite(absent, "k404", "a@example.com")
	require.Equal(t, http.StatusNotFound, again.StatusCode())
	require.Equal(t, "true", again.HTTPResponse.Header.Get(idempotency.ReplayedHeader))
	code, msg, rid := errorBody(t, again.Body)
	wantCode, wantMsg, firstRID := errorBody(t, first.Body)
	require.Equal(t, wantCode, code)
	require.Equal(t, wantMsg, msg)
	require.Equal(t, again.HTTPResponse.Header.Get("X-Request-Id"), rid)
	require.NotEqual(t, firstRID, rid)

	// A 409 is not stored: its cause can pass, and a retry runs again.
	require.Equal(t, http.StatusCreated, invite(b.admin.WorkspaceID, "k1", "b@example.com").StatusCode())
	for range 2 {
		dup := invite(b.admin.WorkspaceID, "k2", "b@example.com")
		require.Equal(t, http.StatusConflict, dup.StatusCode())
		require.Empty(t, dup.HTTPResponse.Header.Get(idempotency.ReplayedHeader))
	}
	require.Equal(t, 2, b.count(t, "SELECT count(*) FROM idempotency_key"), "k404 and k1 only")
}

func TestRequestsWithoutOrOutsideTheHeaderAreUntouched(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created := b.createKey(t, b.admin.APIKey, "", "ci")
	require.Equal(t, http.StatusCreated, created.StatusCode())
	require.Zero(t, b.count(t, "SELECT count(*) FROM idempotency_key"))

	// revokeAPIKey does not declare the header: it is ignored.
	path := "/api/v1/api-keys/" + created.JSON201.ApiKey.Id + "/revoke"
	for _, want := range []string{`"` + created.JSON201.ApiKey.Id + `:2"`, `"` + created.JSON201.ApiKey.Id + `:2"`} {
		resp := b.h.Do(t, http.MethodPost, path, nil, "Authorization", "Bearer "+b.admin.APIKey,
			"If-Match", "*", idempotency.Header, "k")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, want, resp.Header.Get("ETag"))
		require.Empty(t, resp.Header.Get(idempotency.ReplayedHeader))
	}
	require.Zero(t, b.count(t, "SELECT count(*) FROM idempotency_key"))

	// A malformed key is refused by the contract, before anything runs.
	resp := b.h.Do(t, http.MethodPost, "/api/v1/api-keys", map[string]string{"name": "x", "role": "viewer"},
		"Authorization", "Bearer "+b.admin.APIKey, idempotency.Header, strings.Repeat("k", 256))
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Zero(t, b.count(t, "SELECT count(*) FROM api_key WHERE name = 'x'"))
}

func TestExpiredKeysAreReusableAndPurged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.createKey(t, b.admin.APIKey, "old", "ci")
	require.Equal(t, http.StatusCreated, first.StatusCode())
	live := b.createKey(t, b.admin.APIKey, "live", "ci")
	require.Equal(t, http.StatusCreated, live.StatusCode())

	// Completed records live 24 hours from creation, by the database's clock.
	require.Equal(t, 2, b.count(t,
		"SELECT count(*) FROM idempotency_key WHERE expires_at = created_at + interval '24 hours' AND state = 'completed'"))

	// Back-date "old" past its 24 hours: the key is free again.
	_, err := b.h.App.Pool.Exec(t.Context(),
		"UPDATE idempotency_key SET created_at = now() - interval '25 hours', expires_at = now() - interval '1 hour' WHERE id = (SELECT id FROM idempotency_key ORDER BY created_at LIMIT 1)")
	require.NoError(t, err)
	again := b.createKey(t, b.admin.APIKey, "old", "ci")
	require.Equal(t, http.StatusCreated, again.StatusCode())
	require.Empty(t, again.HTTPResponse.Header.Get(idempotency.ReplayedHeader))
	require.NotEqual(t, first.JSON201.Token, again.JSON201.Token)
	require.Equal(t, 3, b.count(t, "SELECT count(*) FROM api_key WHERE name = 'ci'"))
	require.Equal(t, 2, b.count(t, "SELECT count(*) FROM idempotency_key"), "the expired record was taken over")

	// The sweep deletes expired records only.
	_, err = b.h.App.Pool.Exec(t.Context(), "UPDATE idempotency_key SET expires_at = now() - interval '1 second' WHERE id = (SELECT id FROM idempotency_key ORDER BY created_at LIMIT 1)")
	require.NoError(t, err)
	require.Contains(t, b.h.App.Sweeps.Sweeps(), "purge_idempotency_keys")
	pass, err := b.h.App.Sweeps.RunOnce(t.Context(), "purge_idempotency_keys")
	require.NoError(t, err)
	require.True(t, pass.Ran)
	require.NoError(t, pass.Err)
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM idempotency_key"))
	replay := b.createKey(t, b.admin.APIKey, "old", "ci")
	require.Equal(t, "true", replay.HTTPResponse.Header.Get(idempotency.ReplayedHeader), "the live record is kept")
	require.Equal(t, again.JSON201.Token, replay.JSON201.Token)
}

func ptr[T any](v T) *T { return &v }
