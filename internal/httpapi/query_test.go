package httpapi_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apitest"
)

// invalidFields asserts a 400 invalid_argument and returns its detail fields.
func invalidFields(t *testing.T, status int, out map[string]any) []string {
	t.Helper()
	require.Equal(t, http.StatusBadRequest, status, out)
	require.Equal(t, "invalid_argument", out["error"].(map[string]any)["code"], out)
	return fields(t, out)
}

func TestThreadsAndRunsFilterByAgentThreadAndStatus(t *testing.T) {
	t.Parallel()
	b := setupRuns(t)
	other := b.mustAgent(t, "other", map[string]any{"model": "main"})["id"].(string)
	r1 := b.startRun(t, "one")
	b.answer(t, b.claim(t), "done")
	r2 := b.must(t, http.StatusAccepted, http.MethodPost, "/api/v1/runs", map[string]any{"agent_id": other, "input": "two"})
	r3 := b.startRun(t, "three")
	get := func(path string) []string { return itemIDs(t, b.must(t, http.StatusOK, http.MethodGet, path, nil)) }
	id := func(r map[string]any) string { return r["id"].(string) }
	thread := func(r map[string]any) string { return r["thread_id"].(string) }

	require.Equal(t, []string{thread(r3), thread(r2), thread(r1)}, get("/api/v1/threads"))
	require.Equal(t, []string{thread(r2)}, get("/api/v1/threads?agent_id="+other))
	require.Equal(t, []string{thread(r3), thread(r1)}, get("/api/v1/threads?agent_id="+b.agentID))
	require.Equal(t, []string{thread(r1)}, get("/api/v1/threads?agent_id="+b.agentID+"&limit=1&cursor="+
		*nullableCursor(b.must(t, http.StatusOK, http.MethodGet, "/api/v1/threads?limit=1&agent_id="+b.agentID, nil))))

	require.Equal(t, []string{id(r3), id(r1)}, get("/api/v1/runs?agent_id="+b.agentID))
	require.Equal(t, []string{id(r1)}, get("/api/v1/runs?agent_id="+b.agentID+"&status=succeeded"))
	require.Equal(t, []string{id(r3), id(r2)}, get("/api/v1/runs?status=accepted"))
	require.Equal(t, []string{id(r1)}, get("/api/v1/runs?thread_id="+thread(r1)))
	require.Empty(t, get("/api/v1/runs?thread_id="+thread(r1)+"&status=accepted"), "the status applies with thread_id too")
	require.Empty(t, get("/api/v1/runs?thread_id="+thread(r1)+"&agent_id="+other))

	for _, path := range []string{"/api/v1/threads?agent_id=", "/api/v1/runs?agent_id="} {
		status, out, _ := b.do(t, http.MethodGet, path+"ap_01jd5v6w1q3yb8j8y3tn9z2k7h", nil)
		require.Equal(t, http.StatusNotFound, status, out)
		require.Equal(t, []string{"agent_id"}, fields(t, out))
	}
	status, out, _ := b.do(t, http.MethodGet, "/api/v1/runs?thread_id=th_01jd5v6w1q3yb8j8y3tn9z2k7h", nil)
	require.Equal(t, http.StatusNotFound, status, out)
	require.Equal(t, []string{"thread_id"}, fields(t, out))
}

func nullableCursor(out map[string]any) *string {
	c, _ := out["next_cursor"].(string)
	return &c
}

// A misspelt or unsupported query parameter is refused on every operation,
// naming it, instead of being ignored (GET /threads?agent=... listing every
// thread); the documented ones, the console and the contract page still work.
func TestUnknownQueryParametersAreRefused(t *testing.T) {
	t.Parallel()
	b := setupRuns(t)
	r := b.startRun(t, "hi")
	thread := "/api/v1/threads/" + r["thread_id"].(string)

	status, out, _ := b.do(t, http.MethodGet, "/api/v1/threads?agent="+b.agentID+"&limit=5&zz=1", nil)
	require.Equal(t, []string{"agent", "zz"}, invalidFields(t, status, out))
	status, out, _ = b.do(t, http.MethodGet, "/api/v1/runs/"+r["id"].(string)+"?verbose=true", nil)
	require.Equal(t, []string{"verbose"}, invalidFields(t, status, out))
	status, out, _ = b.do(t, http.MethodPost, "/api/v1/runs?dry_run=1", map[string]any{"agent_id": b.agentID, "input": "x"})
	require.Equal(t, []string{"dry_run"}, invalidFields(t, status, out))
	require.Len(t, itemIDs(t, b.must(t, http.StatusOK, http.MethodGet, "/api/v1/runs", nil)), 1, "the refused POST started nothing")
	status, _, _ = b.do(t, http.MethodGet, "/api/v1/threads?zz=1", nil, "Authorization", "Bearer svc_wrong")
	require.Equal(t, http.StatusUnauthorized, status, "authentication answers first")

	// Documented parameters, including the stream's after.
	b.must(t, http.StatusOK, http.MethodGet, "/api/v1/threads?limit=5&agent_id="+b.agentID, nil)
	b.must(t, http.StatusOK, http.MethodGet, thread+"/events?after=0&limit=10", nil)
	s := b.openStream(t, thread+"/stream?after=0")
	s.close()
	b.must(t, http.StatusOK, http.MethodGet, "/api/v1/agents?label=team:a&q=help&archived=false&limit=2", nil)

	// Routes outside the contract are left alone.
	resp := b.h.Do(t, http.MethodGet, "/api/v1/openapi.json?download=1", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp = b.h.Do(t, http.MethodGet, "/sign-in?next=%2F", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// A cursor svc did not make is invalid_argument on cursor for every list
// that takes one, never a storage error.
func TestForeignCursorsAreRefusedOnEveryList(t *testing.T) {
	t.Parallel()
	b := setupRuns(t)
	sub := b.must(t, http.StatusCreated, http.MethodPost, "/api/v1/subscriptions",
		map[string]any{"url": "https://93.184.216.34/hook", "event_types": []string{"run.succeeded"}})
	skill := b.mustCreate(t, "skills", map[string]any{"name": "s", "config": map[string]any{"instructions": "Be brief."}})
	mem := b.must(t, http.StatusCreated, http.MethodPost, "/api/v1/memories", map[string]any{"name": "m", "kind": "builtin"})
	values := map[string]string{
		"workspace_id": b.admin.WorkspaceID, "organization_id": b.admin.OrganizationID, "agent_id": b.agentID,
		"skill_id": skill["id"].(string), "subscription_id": sub["subscription"].(map[string]any)["id"].(string),
		"memory_id": mem["id"].(string),
	}
	doc := apitest.Contract(t)
	var tried []string
	for path, item := range doc.Paths.Map() {
		op := item.Get
		if op == nil || !strings.HasPrefix(path, "/api/") ||
			!slices.ContainsFunc(op.Parameters, func(p *openapi3.ParameterRef) bool { return p.Value != nil && p.Value.Name == "cursor" }) {
			continue // the console's pages show a refused cursor on the page
		}
		concrete, ok := fillPath(path, values)
		if !ok {
			t.Fatalf("no value for a parameter of %s", path)
		}
		for _, cursor := range []string{"garbage", "%FF%FE", "_w", "bm90IGFuIGlk"} {
			status, out, _ := b.do(t, http.MethodGet, concrete+"?cursor="+cursor, nil)
			require.Equal(t, []string{"cursor"}, invalidFields(t, status, out), "%s cursor=%s", concrete, cursor)
		}
		tried = append(tried, path)
	}
	require.Contains(t, tried, "/api/v1/audit-events")
	require.Greater(t, len(tried), 10)
}

// fillPath replaces each {name} of an OpenAPI path with values[name].
func fillPath(path string, values map[string]string) (string, bool) {
	out := path
	for {
		open := strings.IndexByte(out, '{')
		if open < 0 {
			return out, true
		}
		end := strings.IndexByte(out, '}')
		v, ok := values[out[open+1:end]]
		if !ok {
			return "", false
		}
		out = out[:open] + v + out[end+1:]
	}
}

// An integer member written as 1e2 is refused naming the member, not with
// the Go decoder's message.
func TestExponentIntegersAreRefusedNamingTheField(t *testing.T) {
	t.Parallel()
	b := setupTemplates(t)
	for _, n := range []string{"6e2", "600.0", "1e400"} {
		body := json.RawMessage(`{"name":"x","environment_provider_id":"` + b.docker + `","config":{"image":"a"},"idle_stop_seconds":` + n + `}`)
		status, out, _ := b.do(t, http.MethodPost, templatesPath, body)
		require.Equal(t, []string{"idle_stop_seconds"}, invalidFields(t, status, out), n)
		msg := out["error"].(map[string]any)["message"].(string)
		require.NotContains(t, msg, "Unmarshal")
	}
	require.Zero(t, b.count(t))
}
