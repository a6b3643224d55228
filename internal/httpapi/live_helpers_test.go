package httpapi_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/client"
)

// The helpers of the live-resource tests (environment templates,
// environments, memories, subscriptions).

// dockerProvider makes an environment provider of the docker type on the
// engine socket the test configuration allows.
func (b *providersBundle) dockerProvider(t *testing.T) string {
	t.Helper()
	p := b.create(t, "environment", map[string]any{"type": "docker", "name": "Docker", "config": map[string]any{"host": "unix:///var/run/docker.sock"}})
	return p["id"].(string)
}

// modalProvider makes an environment provider of a type that cannot stop
// environments (only delete them).
func (b *providersBundle) modalProvider(t *testing.T) string {
	t.Helper()
	p := b.create(t, "environment", map[string]any{"type": "modal", "name": "Modal",
		"credential": map[string]any{"token_id": "ak-test", "token_secret": secretKey}})
	return p["id"].(string)
}

// memoryProvider makes a turbopuffer memory provider.
func (b *providersBundle) memoryProvider(t *testing.T) string {
	t.Helper()
	p := b.create(t, "memory", map[string]any{"type": "turbopuffer", "name": "tpuf",
		"config": map[string]any{"region": "gcp-us-central1"}, "credential": map[string]any{"api_key": secretKey}})
	return p["id"].(string)
}

// disable disables a provider of the kind.
func (b *providersBundle) disable(t *testing.T, kind, id string) {
	t.Helper()
	status, out, _ := b.do(t, http.MethodPatch, "/api/v1/"+kind+"-providers/"+id, map[string]any{"enabled": false}, "If-Match", "*")
	require.Equal(t, http.StatusOK, status, out)
}

// otherWorkspace creates a second workspace of the organization and returns
// its first admin key.
func (b *providersBundle) otherWorkspace(t *testing.T) string {
	t.Helper()
	ws, err := b.api.CreateWorkspaceWithResponse(t.Context(), nil, client.CreateWorkspaceRequest{Name: "other"})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, ws.StatusCode(), string(ws.Body))
	return ws.JSON201.ApiKey
}

// as returns the headers that make b.do act with token.
func as(token string, header ...string) []string {
	return append([]string{"Authorization", "Bearer " + token}, header...)
}

// auditTrail lists "action:field,field" of a subject's audit events, oldest first.
func (b *providersBundle) auditTrail(t *testing.T, subjectID string) []string {
	t.Helper()
	rows, err := b.h.App.Pool.Query(t.Context(),
		`SELECT action || ':' || array_to_string(changed_fields, ',') FROM audit_event WHERE subject_id = $1 ORDER BY id`, subjectID)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		out = append(out, s)
	}
	require.NoError(t, rows.Err())
	return out
}

// raceOnce runs n changes at once, each with the same ETag, and requires that
// exactly one succeeds (wantStatus) and every other gets 412.
func raceOnce(t *testing.T, n, wantStatus int, change func(i int) int) {
	t.Helper()
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { statuses[i] = change(i) })
	}
	wg.Wait()
	won := 0
	for _, s := range statuses {
		require.Contains(t, []int{wantStatus, http.StatusPreconditionFailed}, s, statuses)
		if s == wantStatus {
			won++
		}
	}
	require.Equal(t, 1, won, statuses)
}

// errorMessage returns the message of an error answer.
func errorMessage(t *testing.T, out map[string]any) string {
	t.Helper()
	e, ok := out["error"].(map[string]any)
	require.True(t, ok, "an error body: %v", out)
	return e["message"].(string)
}

// errorCode returns the code of an error answer.
func errorCode(t *testing.T, out map[string]any) string {
	t.Helper()
	e, ok := out["error"].(map[string]any)
	require.True(t, ok, "an error body: %v", out)
	return e["code"].(string)
}
