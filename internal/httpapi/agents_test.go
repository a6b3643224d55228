package httpapi_test

import (
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/client"
)

// agentsBundle is the models bundle plus an enabled model "main" and a web
// provider (tavily: search and fetch).
type agentsBundle struct {
	*modelsBundle
	web map[string]any
}

func setupAgents(t *testing.T) *agentsBundle {
	t.Helper()
	b := setupModels(t)
	b.mustModel(t, "main")
	web := b.create(t, "web", map[string]any{"type": "tavily", "name": "Tavily", "credential": map[string]any{"api_key": secretKey}})
	return &agentsBundle{modelsBundle: b, web: web}
}

// etag is the ETag of a view decoded as a map.
func etag(v map[string]any) string {
	return `"` + v["id"].(string) + ":" + strconv.Itoa(int(v["version"].(float64))) + `"`
}

// mustCreate creates a resource of the collection ("agents" or "skills") and
// returns its view, failing unless it is 201 with Location and ETag.
func (b *agentsBundle) mustCreate(t *testing.T, collection string, body map[string]any) map[string]any {
	t.Helper()
	status, out, hdr := b.do(t, http.MethodPost, "/api/v1/"+collection, body)
	require.Equal(t, http.StatusCreated, status, out)
	require.Equal(t, "/api/v1/"+collection+"/"+out["id"].(string), hdr.Get("Location"))
	require.Equal(t, etag(out), hdr.Get("ETag"))
	return out
}

func (b *agentsBundle) mustAgent(t *testing.T, name string, cfg map[string]any) map[string]any {
	t.Helper()
	return b.mustCreate(t, "agents", map[string]any{"name": name, "config": cfg})
}

// get reads a path as the admin and fails unless it is 200.
func (b *agentsBundle) get(t *testing.T, path string) map[string]any {
	t.Helper()
	status, out, _ := b.do(t, http.MethodGet, path, nil)
	require.Equal(t, http.StatusOK, status, out)
	return out
}

// publish posts a revision to an agent or skill path.
func (b *agentsBundle) publish(t *testing.T, headPath string, body map[string]any) (int, map[string]any) {
	t.Helper()
	status, out, hdr := b.do(t, http.MethodPost, headPath+"/revisions", body)
	if status == http.StatusCreated {
		require.Equal(t, headPath+"/revisions/"+out["id"].(string), hdr.Get("Location"))
		require.Empty(t, hdr.Get("ETag"), "revisions never change and carry no ETag")
	}
	return status, out
}

// auditActions lists the audit actions recorded on a subject, oldest first.
func (b *agentsBundle) auditActions(t *testing.T, subject string) []string {
	t.Helper()
	rows, err := b.h.App.Pool.Query(t.Context(), `SELECT action FROM audit_event WHERE subject_id = $1 ORDER BY id`, subject)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var a string
		require.NoError(t, rows.Scan(&a))
		out = append(out, a)
	}
	require.NoError(t, rows.Err())
	return out
}

func (b *agentsBundle) revisionCount(t *testing.T, head string) int {
	t.Helper()
	var n int
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT count(*) FROM revision WHERE head_id = $1`, head).Scan(&n))
	return n
}

func TestAgentsCreateReadPublish(t *testing.T) {
	t.Parallel()
	b := setupAgents(t)
	name := "Kundendienst \u65e5\u672c\u8a9e \U0001F916 agent" // unicode names are fine
	a := b.mustCreate(t, "agents", map[string]any{
		"name": name, "description": "Answers tickets.\nSecond line.", "labels": map[string]any{"team": "support", "tier": "gold"},
		"config": map[string]any{"model": "main", "instructions": "Be kind.",
			"tools": map[string]any{"web": map[string]any{"provider_id": b.web["id"], "operations": []any{"search", "fetch"}}}},
	})
	require.Regexp(t, `^ap_[0-9a-z]{26}$`, a["id"])
	require.Equal(t, name, a["name"])
	require.Equal(t, "Answers tickets.\nSecond line.", a["description"])
	require.Equal(t, map[string]any{"team": "support", "tier": "gold"}, a["labels"])
	require.Regexp(t, `^rev_[0-9a-z]{26}$`, a["default_revision_id"])
	require.EqualValues(t, 1, a["latest_revision_number"])
	require.Equal(t, false, a["archived"])
	require.Nil(t, a["archived_at"])
	require.Contains(t, a, "archived_at")
	require.EqualValues(t, 1, a["version"])
	require.Equal(t, b.admin.PrincipalID, a["created_by_id"])
	path := "/api/v1/agents/" + a["id"].(string)
	require.Equal(t, a, b.get(t, path))

	// Revision 1 holds the normalized configuration: every member, defaults applied, sets sorted.
	r1 := b.get(t, path+"/revisions/"+a["default_revision_id"].(string))
	require.EqualValues(t, 1, r1["number"])
	require.Equal(t, a["id"], r1["agent_id"])
	require.Regexp(t, `^sha256:[0-9a-f]{64}$`, r1["content_hash"])
	require.Equal(t, map[string]any{
		"model": "main", "instructions": "Be kind.",
		"tools": map[string]any{"web": map[string]any{"provider_id": b.web["id"], "operations": []any{"fetch", "search"}},
			"environment": nil, "connections": []any{}},
		"skills": []any{}, "memories": []any{}, "subagents": []any{},
		"limits":      map[string]any{"max_steps": float64(100), "max_tokens": float64(1000000), "timeout_seconds": float64(3600)},
		"context":     map[string]any{"strategy": "summarize"},
		"tool_policy": map[string]any{"toolsets": map[string]any{}, "tools": map[string]any{}, "approval_timeout_seconds": nil, "on_timeout": "deny"},
	}, r1["config"])

	// A changed configuration is revision 2, the new default.
	status, r2 := b.publish(t, path, map[string]any{"config": map[string]any{"model": "main", "limits": map[string]any{"max_steps": 5}}})
	require.Equal(t, http.StatusCreated, status, r2)
	require.EqualValues(t, 2, r2["number"])
	require.NotEqual(t, r1["content_hash"], r2["content_hash"])
	after := b.get(t, path)
	require.Equal(t, r2["id"], after["default_revision_id"])
	require.EqualValues(t, 2, after["latest_revision_number"])
	require.EqualValues(t, 2, after["version"])
	require.Equal(t, []string{"agent.created", "agent.revision_published"}, b.auditActions(t, a["id"].(string)))

	// Revisions list newest first, with a cursor.
	page := b.get(t, path+"/revisions?limit=1")
	require.Len(t, page["items"], 1)
	require.Equal(t, r2["id"], page["items"].([]any)[0].(map[string]any)["id"])
	page = b.get(t, path+"/revisions?limit=1&cursor="+url.QueryEscape(page["next_cursor"].(string)))
	require.Equal(t, r1["id"], page["items"].([]any)[0].(map[string]any)["id"])
	require.Nil(t, page["next_cursor"], "a full last page has no cursor")
	require.Nil(t, b.get(t, path+"/revisions?limit=2")["next_cursor"], "exactly limit revisions: one page")

	// A viewer reads but cannot publish.
	status, _, _ = b.do(t, http.MethodPost, path+"/revisions", map[string]any{"config": map[string]any{"model": "main"}},
		"Authorization", "Bearer "+b.viewer.Token)
	require.Equal(t, http.StatusForbidden, status)
}

func TestAgentsIdenticalPublishCreatesNothing(t *testing.T) {
	t.Parallel()
	b := setupAgents(t)
	a := b.mustAgent(t, "same", map[string]any{"model": "main", "instructions": "x",
		"tools": map[string]any{"web": map[string]any{"provider_id": b.web["id"], "operations": []any{"search", "fetch"}}}})
	path := "/api/v1/agents/" + a["id"].(string)
	before := b.get(t, path)
	// The same content, spelled differently: other member order, other set
	// order, defaults written out.
	same := map[string]any{
		"limits": map[string]any{"timeout_seconds": 3600, "max_steps": 100},
		"tools":  map[string]any{"connections": []any{}, "web": map[string]any{"operations": []any{"fetch", "search"}, "provider_id": b.web["id"]}},
		"model":  "main", "instructions": "x", "skills": []any{},
	}
	for _, makeDefault := range []any{nil, true, false} {
		body := map[string]any{"config": same}
		if makeDefault != nil {
			body["make_default"] = makeDefault
		}
		status, r := b.publish(t, path, body)
		require.Equal(t, http.StatusCreated, status, r)
		require.Equal(t, before["default_revision_id"], r["id"], "make_default=%v: the same revision", makeDefault)
		require.EqualValues(t, 1, r["number"])
		status, now, hdr := b.do(t, http.MethodGet, path, nil)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, before, now, "version and view unchanged")
		require.Equal(t, etag(before), hdr.Get("ETag"))
	}
	require.Equal(t, []string{"agent.created"}, b.auditActions(t, a["id"].(string)))
	require.Equal(t, 1, b.revisionCount(t, a["id"].(string)))

	// make_default=false with new content adds a revision but keeps the default;
	// the head's version moves (its latest revision number changed).
	status, r2 := b.publish(t, path, map[string]any{"config": map[string]any{"model": "main"}, "make_default": false})
	require.Equal(t, http.StatusCreated, status, r2)
	require.EqualValues(t, 2, r2["number"])
	now := b.get(t, path)
	require.Equal(t, before["default_revision_id"], now["default_revision_id"])
	require.EqualValues(t, 2, now["latest_revision_number"])
	require.EqualValues(t, 2, now["version"])
	// Identity is decided against the default only: the content of the
	// non-default revision 2 again is a new revision.
	status, r3 := b.publish(t, path, map[string]any{"config": map[string]any{"model": "main"}, "make_default": false})
	require.Equal(t, http.StatusCreated, status, r3)
	require.EqualValues(t, 3, r3["number"])
	require.Equal(t, r2["content_hash"], r3["content_hash"])
}

func TestAgentsConcurrentIdenticalPublishes(t *testing.T) {
	t.Parallel()
	b := setupAgents(t)
	a := b.mustAgent(t, "race", map[string]any{"model": "main"})
	path := "/api/v1/agents/" + a["id"].(string)
	const n = 8
	ids := make([]string, n)
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			status, r := b.publish(t, path, map[string]any{"config": map[string]any{"model": "main", "instructions": "new"}})
			statuses[i] = status
			if status == http.StatusCreated {
				ids[i] = r["id"].(string)
			}
		})
	}
	wg.Wait()
	for i := range n {
		require.Equal(t, http.StatusCreated, statuses[i])
		require.Equal(t, ids[0], ids[i], "every publish answers the one revision")
	}
	require.Equal(t, 2, b.revisionCount(t, a["id"].(string)))
	now := b.get(t, path)
	require.EqualValues(t, 2, now["version"])
	require.Equal(t, ids[0], now["default_revision_id"])
}

func TestAgentsRollback(t *testing.T) {
	t.Parallel()
	b := setupAgents(t)
	a := b.mustAgent(t, "rollback", map[string]any{"model": "main", "instructions": "v1"})
	other := b.mustAgent(t, "other", map[string]any{"model": "main"})
	path := "/api/v1/agents/" + a["id"].(string)
	_, r2 := b.publish(t, path, map[string]any{"config": map[string]any{"model": "main", "instructions": "v2"}})
	cur := b.get(t, path)
	require.Equal(t, r2["id"], cur["default_revision_id"])

	// Another agent's revision, and an absent one: 404 naming default_revision_id.
	for _, rev := range []any{other["default_revision_id"], "rev_01jd5v6w1q3yb8j8y3tn9z2k7h"} {
		status, out, _ := b.do(t, http.MethodPatch, path, map[string]any{"default_revision_id": rev}, "If-Match", etag(cur))
		require.Equal(t, http.StatusNotFound, status, out)
		require.Equal(t, []string{"default_revision_id"}, fields(t, out))
	}
	status, rolled, hdr := b.do(t, http.MethodPatch, path, map[string]any{"default_revision_id": a["default_revision_id"]}, "If-Match", etag(cur))
	require.Equal(t, http.StatusOK, status, rolled)
	require.Equal(t, a["default_revision_id"], rolled["default_revision_id"])
	require.EqualValues(t, 2, rolled["latest_revision_number"], "rollback adds no revision")
	require.EqualValues(t, 3, rolled["version"])
	require.Equal(t, etag(rolled), hdr.Get("ETag"))
	// Publishing v1's content now is identical to the default again.
	status, r := b.publish(t, path, map[string]any{"config": map[string]any{"model": "main", "instructions": "v1"}})
	require.Equal(t, http.StatusCreated, status)
	require.Equal(t, a["default_revision_id"], r["id"])
	require.Equal(t, []string{"agent.created", "agent.revision_published", "agent.updated"}, b.auditActions(t, a["id"].(string)))
}

func TestAgentsArchiveRules(t *testing.T) {
	t.Parallel()
	b := setupAgents(t)
	a := b.mustAgent(t, "archive-me", map[string]any{"model": "main"})
	path := "/api/v1/agents/" + a["id"].(string)

	status, out, _ := b.do(t, http.MethodPost, path+"/archive", nil)
	require.Equal(t, http.StatusPreconditionRequired, status, out)
	status, out, _ = b.do(t, http.MethodPost, path+"/archive", nil, "If-Match", `"`+a["id"].(string)+`:9"`)
	require.Equal(t, http.StatusPreconditionFailed, status, out)
	status, out, _ = b.do(t, http.MethodPost, path+"/unarchive", nil, "If-Match", etag(a))
	require.Equal(t, http.StatusConflict, status, out)
	require.Equal(t, "conflict", out["error"].(map[string]any)["code"], "only an archived agent can be unarchived")

	status, archived, hdr := b.do(t, http.MethodPost, path+"/archive", nil, "If-Match", etag(a))
	require.Equal(t, http.StatusOK, status, archived)
	require.Equal(t, true, archived["archived"])
	require.NotNil(t, archived["archived_at"])
	require.EqualValues(t, 2, archived["version"])
	require.Equal(t, etag(archived), hdr.Get("ETag"))
	// Archiving again changes nothing.
	status, again, _ := b.do(t, http.MethodPost, path+"/archive", nil, "If-Match", etag(archived))
	require.Equal(t, http.StatusOK, status, again)
	require.Equal(t, archived, again)

	// An archived agent takes no revisions and cannot become a subagent; it can still be renamed.
	status, out = b.publish(t, path, map[string]any{"config": map[string]any{"model": "main", "instructions": "new"}})
	require.Equal(t, http.StatusConflict, status, out)
	status, out, _ = b.do(t, http.MethodPost, "/api/v1/agents", map[string]any{"name": "boss",
		"config": map[string]any{"model": "main", "subagents": []any{map[string]any{"agent_id": a["id"]}}}})
	require.Equal(t, http.StatusConflict, status, out)
	require.Equal(t, []string{"config.subagents[0].agent_id"}, fields(t, out))
	status, renamed, _ := b.do(t, http.MethodPatch, path, map[string]any{"name": "retired"}, "If-Match", etag(archived))
	require.Equal(t, http.StatusOK, status, renamed)

	status, active, _ := b.do(t, http.MethodPost, path+"/unarchive", nil, "If-Match", etag(renamed))
	require.Equal(t, http.StatusOK, status, active)
	require.Equal(t, false, active["archived"])
	require.Nil(t, active["archived_at"])
	require.EqualValues(t, 4, active["version"])
	require.Equal(t, []string{"agent.created", "agent.archived", "agent.updated", "agent.unarchived"}, b.auditActions(t, a["id"].(string)))

	// Another workspace's agent is 404 with If-Match, like an absent one; without
	// it the change is refused before any agent is looked up.
	ws, err := b.api.CreateWorkspaceWithResponse(t.Context(), nil, client.CreateWorkspaceRequest{Name: "other"})
	require.NoError(t, err)
	key := []string{"Authorization", "Bearer " + ws.JSON201.ApiKey}
	status, _, _ = b.do(t, http.MethodPost, path+"/archive", nil, append(key, "If-Match", "*")...)
	require.Equal(t, http.StatusNotFound, status)
	status, _, _ = b.do(t, http.MethodPost, path+"/archive", nil, key...)
	require.Equal(t, http.StatusPreconditionRequired, status)
}

func TestAgentsPatch(t *testing.T) {
	t.Parallel()
	b := setupAgents(t)
	a := b.mustCreate(t, "agents", map[string]any{"name": "p", "labels": map[string]any{"a": "1"}, "config": map[string]any{"model": "main"}})
	path := "/api/v1/agents/" + a["id"].(string)

	// An empty PATCH, and one that sets what is already there, keep the version.
	for _, body := range []map[string]any{{}, {"name": "p", "labels": map[string]any{"a": "1"}, "description": ""}} {
		status, out, hdr := b.do(t, http.MethodPatch, path, body, "If-Match", etag(a))
		require.Equal(t, http.StatusOK, status, out)
		require.Equal(t, a, out)
		require.Equal(t, etag(a), hdr.Get("ETag"))
	}
	require.Equal(t, []string{"agent.created"}, b.auditActions(t, a["id"].(string)))

	status, out, _ := b.do(t, http.MethodPatch, path, map[string]any{"labels": map[string]any{"b": "2"}, "description": "d"}, "If-Match", etag(a))
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, map[string]any{"b": "2"}, out["labels"], "labels are replaced whole")
	require.EqualValues(t, 2, out["version"])
	var changed string
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(),
		`SELECT array_to_string(changed_fields, ',') FROM audit_event WHERE subject_id = $1 AND action = 'agent.updated'`, a["id"]).Scan(&changed))
	require.Equal(t, "description,labels", changed)

	// Refusals change nothing.
	for _, body := range []map[string]any{{"name": ""}, {"name": "a\u0000b"}, {"name": "tab\tname"}, {"config": map[string]any{"model": "main"}}} {
		status, out, _ := b.do(t, http.MethodPatch, path, body, "If-Match", etag(out))
		require.Equal(t, http.StatusBadRequest, status, body)
		require.Equal(t, "invalid_argument", out["error"].(map[string]any)["code"])
	}
	require.EqualValues(t, 2, b.get(t, path)["version"])
}

// TestAgentsConcurrentPatch: of writers holding one ETag, exactly one wins.
func TestAgentsConcurrentPatch(t *testing.T) {
	t.Parallel()
	b := setupAgents(t)
	a := b.mustAgent(t, "race", map[string]any{"model": "main"})
	path := "/api/v1/agents/" + a["id"].(string)
	const n = 8
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			statuses[i], _, _ = b.do(t, http.MethodPatch, path, map[string]any{"name": "writer-" + strconv.Itoa(i)}, "If-Match", etag(a))
		})
	}
	wg.Wait()
	won := 0
	for _, s := range statuses {
		require.Contains(t, []int{http.StatusOK, http.StatusPreconditionFailed}, s)
		if s == http.StatusOK {
			won++
		}
	}
	require.Equal(t, 1, won, statuses)
	require.EqualValues(t, 2, b.get(t, path)["version"])
	require.Len(t, b.auditActions(t, a["id"].(string)), 2)
}

func TestAgentsCreateIsIdempotent(t *testing.T) {
	t.Parallel()
	b := setupAgents(t)
	body := map[string]any{"name": "once", "config": map[string]any{"model": "main"}}
	status, first, hdr := b.do(t, http.MethodPost, "/api/v1/agents", body, "Idempotency-Key", "k-1")
	require.Equal(t, http.StatusCreated, status, first)
	status, again, hdr2 := b.do(t, http.MethodPost, "/api/v1/agents", body, "Idempotency-Key", "k-1")
	require.Equal(t, http.StatusCreated, status, again)
	require.Equal(t, "true", hdr2.Get("Idempotent-Replayed"))
	require.Equal(t, first, again)
	require.Equal(t, hdr.Get("ETag"), hdr2.Get("ETag"))
	list := b.get(t, "/api/v1/agents")
	require.Len(t, list["items"], 1)
}
