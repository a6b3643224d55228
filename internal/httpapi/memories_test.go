package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/id"
	mem "github.com/svcdev/svc/internal/memory"
	"github.com/svcdev/svc/internal/provider/probe"
	"github.com/svcdev/svc/internal/resource"
	"github.com/svcdev/svc/internal/testfactory"
)

const memoriesPath = "/api/v1/memories"

type memoriesBundle struct {
	*providersBundle
	tpuf string // a memory provider
}

func setupMemories(t *testing.T) *memoriesBundle {
	t.Helper()
	b := setupProviders(t)
	return &memoriesBundle{providersBundle: b, tpuf: b.memoryProvider(t)}
}

func (b *memoriesBundle) mustMemory(t *testing.T, body map[string]any) map[string]any {
	t.Helper()
	status, out, hdr := b.do(t, http.MethodPost, memoriesPath, body)
	require.Equal(t, http.StatusCreated, status, out)
	require.Equal(t, memoriesPath+"/"+out["id"].(string), hdr.Get("Location"))
	require.Equal(t, etag(out), hdr.Get("ETag"))
	return out
}

// outboxPurges returns the payloads of the queued namespace purges.
func (b *memoriesBundle) outboxPurges(t *testing.T) []map[string]any {
	t.Helper()
	rows, err := b.h.App.Pool.Query(t.Context(),
		`SELECT workspace_id, payload, status FROM outbox WHERE kind = 'memory_namespace_purge' ORDER BY id`)
	require.NoError(t, err)
	defer rows.Close()
	var out []map[string]any
	for rows.Next() {
		var ws, status string
		var payload []byte
		require.NoError(t, rows.Scan(&ws, &payload, &status))
		var p map[string]any
		require.NoError(t, json.Unmarshal(payload, &p))
		p["_workspace_id"], p["_status"] = ws, status
		out = append(out, p)
	}
	require.NoError(t, rows.Err())
	return out
}

func TestMemoriesCreateReadList(t *testing.T) {
	t.Parallel()
	b := setupMemories(t)
	rec := b.mustMemory(t, map[string]any{"name": "Customer facts", "kind": "record", "memory_provider_id": b.tpuf, "description": "Per-customer notes"})
	require.Regexp(t, `^mem_[0-9a-z]{26}$`, rec["id"])
	require.Equal(t, "record", rec["kind"])
	require.Equal(t, b.tpuf, rec["memory_provider_id"])
	require.Equal(t, rec["id"], rec["namespace"], "svc names the namespace after the memory")
	require.False(t, strings.HasPrefix(rec["namespace"].(string), probe.NamespacePrefix), "never a probe's namespace")
	require.Equal(t, "Per-customer notes", rec["description"])
	require.EqualValues(t, 1, rec["version"])
	require.Equal(t, b.admin.PrincipalID, rec["created_by_id"])
	require.Equal(t, []string{"memory.created:description,kind,memory_provider_id,name,namespace"}, b.auditTrail(t, rec["id"].(string)))

	built := b.mustMemory(t, map[string]any{"name": "Блокнот 📝", "kind": "builtin"})
	require.Equal(t, "builtin", built["kind"])
	require.Contains(t, built, "memory_provider_id")
	require.Nil(t, built["memory_provider_id"])
	require.Nil(t, built["namespace"])
	require.Equal(t, "", built["description"])
	require.Equal(t, "Блокнот 📝", built["name"])
	require.Equal(t, []string{"memory.created:description,kind,name"}, b.auditTrail(t, built["id"].(string)))

	status, got, hdr := b.do(t, http.MethodGet, memoriesPath+"/"+rec["id"].(string), nil, as(b.viewer.Token)...)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, rec, got)
	require.Equal(t, etag(rec), hdr.Get("ETag"))

	status, out, _ := b.do(t, http.MethodGet, memoriesPath+"?limit=1", nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, []any{built}, out["items"], "newest first")
	status, out, _ = b.do(t, http.MethodGet, memoriesPath+"?limit=1&cursor="+out["next_cursor"].(string), nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, []any{rec}, out["items"])

	status, out, _ = b.do(t, http.MethodPost, memoriesPath, map[string]any{"name": "v", "kind": "builtin"}, as(b.viewer.Token)...)
	require.Equal(t, http.StatusForbidden, status, out)
}

func TestMemoriesRefuseBadInput(t *testing.T) {
	t.Parallel()
	b := setupMemories(t)
	model := b.createModel(t).Id
	disabled := b.memoryProvider(t)
	b.disable(t, "memory", disabled)
	other := &providersBundle{h: b.h, admin: b.admin}
	other.admin.APIKey = b.otherWorkspace(t)
	foreign := other.memoryProvider(t)

	cases := []struct {
		name   string
		body   map[string]any
		status int
		code   string
		field  string
	}{
		{"record without a provider", map[string]any{"name": "m", "kind": "record"}, 400, "invalid_argument", "memory_provider_id"},
		{"builtin with a provider", map[string]any{"name": "m", "kind": "builtin", "memory_provider_id": b.tpuf}, 400, "invalid_argument", "memory_provider_id"},
		{"unknown kind", map[string]any{"name": "m", "kind": "vector"}, 400, "invalid_argument", "kind"},
		{"no kind", map[string]any{"name": "m"}, 400, "invalid_argument", "kind"},
		{"control character in the name", map[string]any{"name": "a\nb", "kind": "builtin"}, 400, "invalid_argument", "name"},
		{"name of 201 characters", map[string]any{"name": strings.Repeat("я", 201), "kind": "builtin"}, 400, "invalid_argument", "name"},
		{"a model provider", map[string]any{"name": "m", "kind": "record", "memory_provider_id": model}, 400, "invalid_argument", "memory_provider_id"},
		{"another workspace's provider", map[string]any{"name": "m", "kind": "record", "memory_provider_id": foreign}, 404, "not_found", "memory_provider_id"},
		{"an absent provider", map[string]any{"name": "m", "kind": "record", "memory_provider_id": "prv_01jd5v6w1q3yb8j8y3tn9z2k7h"}, 404, "not_found", "memory_provider_id"},
		{"a disabled provider", map[string]any{"name": "m", "kind": "record", "memory_provider_id": disabled}, 409, "disabled", "memory_provider_id"},
	}
	var notFound []string
	for _, tc := range cases {
		status, out, _ := b.do(t, http.MethodPost, memoriesPath, tc.body)
		require.Equal(t, tc.status, status, "%s: %v", tc.name, out)
		require.Equal(t, tc.code, errorCode(t, out), tc.name)
		require.Contains(t, fields(t, out), tc.field, tc.name)
		if status == http.StatusNotFound {
			notFound = append(notFound, errorMessage(t, out))
		}
	}
	require.Equal(t, notFound[0], notFound[1], "another workspace's provider is answered like an absent one")
	var n int
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT count(*) FROM memory`).Scan(&n))
	require.Zero(t, n, "nothing was stored")
}

func TestMemoriesPatch(t *testing.T) {
	t.Parallel()
	b := setupMemories(t)
	m := b.mustMemory(t, map[string]any{"name": "notes", "kind": "builtin", "description": "d"})
	path := memoriesPath + "/" + m["id"].(string)

	status, out, _ := b.do(t, http.MethodPatch, path, map[string]any{"name": "x"})
	require.Equal(t, http.StatusPreconditionRequired, status, out)
	status, out, _ = b.do(t, http.MethodPatch, path, map[string]any{"name": "x"}, "If-Match", `"`+m["id"].(string)+`:2"`)
	require.Equal(t, http.StatusPreconditionFailed, status, out)
	for _, body := range []map[string]any{{}, {"name": "notes", "description": "d"}} {
		status, out, hdr := b.do(t, http.MethodPatch, path, body, "If-Match", etag(m))
		require.Equal(t, http.StatusOK, status, out)
		require.Equal(t, m, out, "a change to nothing keeps the version")
		require.Equal(t, etag(m), hdr.Get("ETag"))
	}
	status, out, _ = b.do(t, http.MethodPatch, path, map[string]any{"kind": "record"}, "If-Match", etag(m))
	require.Equal(t, http.StatusBadRequest, status, "the kind never changes: %v", out)
	status, _, _ = b.do(t, http.MethodPatch, path, map[string]any{"name": "v"}, as(b.viewer.Token, "If-Match", etag(m))...)
	require.Equal(t, http.StatusForbidden, status)

	status, out, hdr := b.do(t, http.MethodPatch, path, map[string]any{"name": "Заметки"}, "If-Match", etag(m))
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, "Заметки", out["name"])
	require.Equal(t, "d", out["description"])
	require.EqualValues(t, 2, out["version"])
	require.Equal(t, etag(out), hdr.Get("ETag"))
	require.Equal(t, []string{"memory.created:description,kind,name", "memory.updated:name"}, b.auditTrail(t, m["id"].(string)))

	// Of eight writers holding one ETag, one wins.
	cur := out
	raceOnce(t, 8, http.StatusOK, func(i int) int {
		status, _, _ := b.do(t, http.MethodPatch, path, map[string]any{"description": "w" + strconv.Itoa(i)}, "If-Match", etag(cur))
		return status
	})
	_, got, _ := b.do(t, http.MethodGet, path, nil)
	require.EqualValues(t, 3, got["version"])
}

// TestChangesWithoutIfMatch: the contract requires If-Match on changes. Left
// out, the change is 428 precondition_required before anything is looked up
// (an unknown id too); empty, the service answers the same once it holds the
// row; left out beside other faults, the 400 names it among them. Nothing
// changes in any case.
func TestChangesWithoutIfMatch(t *testing.T) {
	t.Parallel()
	b := setupMemories(t)
	m := b.mustMemory(t, map[string]any{"name": "notes", "kind": "builtin"})
	path := memoriesPath + "/" + m["id"].(string)

	for name, tc := range map[string]struct {
		method, path string
		body         map[string]any
		header       []string
	}{
		"patch left out":     {http.MethodPatch, path, map[string]any{"name": "x"}, nil},
		"patch empty":        {http.MethodPatch, path, map[string]any{"name": "x"}, []string{"If-Match", ""}},
		"delete left out":    {http.MethodDelete, path, nil, nil},
		"unknown left out":   {http.MethodPatch, memoriesPath + "/mem_01jd5v6w1q3yb8j8y3tn9z2k7h", map[string]any{"name": "x"}, nil},
		"archive left out":   {http.MethodPost, "/api/v1/agents/ap_01jd5v6w1q3yb8j8y3tn9z2k7h/archive", nil, nil},
		"rotate left out":    {http.MethodPost, "/api/v1/subscriptions/sub_01jd5v6w1q3yb8j8y3tn9z2k7h/rotate-secret", nil, nil},
		"workspace left out": {http.MethodPatch, "/api/v1/workspaces/" + b.admin.WorkspaceID, map[string]any{"name": "x"}, nil},
	} {
		status, out, _ := b.do(t, tc.method, tc.path, tc.body, tc.header...)
		require.Equal(t, http.StatusPreconditionRequired, status, "%s: %v", name, out)
		require.Equal(t, "precondition_required", errorCode(t, out), name)
		require.Equal(t, resource.IfMatchRequired, errorMessage(t, out), name)
	}

	status, out, _ := b.do(t, http.MethodPatch, path, map[string]any{"name": "x", "colour": "red"})
	require.Equal(t, http.StatusBadRequest, status, out)
	require.Equal(t, "invalid_argument", errorCode(t, out))
	require.ElementsMatch(t, []string{"If-Match", "colour"}, fields(t, out))

	_, got, _ := b.do(t, http.MethodGet, path, nil)
	require.Equal(t, m, got, "nothing changed")
}

func TestMemoriesDelete(t *testing.T) {
	t.Parallel()
	b := setupMemories(t)
	rec := b.mustMemory(t, map[string]any{"name": "facts", "kind": "record", "memory_provider_id": b.tpuf})
	built := b.mustMemory(t, map[string]any{"name": "scratch", "kind": "builtin"})
	keep := b.mustMemory(t, map[string]any{"name": "keep", "kind": "builtin"})
	for _, m := range []string{built["id"].(string), built["id"].(string), keep["id"].(string)} {
		testfactory.MemoryRecord(t, b.h.App.Pool, b.admin.Owner(), m, "remember")
	}
	records := func(memoryID string) int {
		var n int
		require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT count(*) FROM memory_record WHERE memory_id = $1`, memoryID).Scan(&n))
		return n
	}

	// Refused deletes change nothing and queue nothing.
	recPath := memoriesPath + "/" + rec["id"].(string)
	status, _, _ := b.do(t, http.MethodDelete, recPath, nil)
	require.Equal(t, http.StatusPreconditionRequired, status)
	status, _, _ = b.do(t, http.MethodDelete, recPath, nil, "If-Match", `"`+rec["id"].(string)+`:0"`)
	require.Equal(t, http.StatusPreconditionFailed, status)
	status, _, _ = b.do(t, http.MethodDelete, recPath, nil, as(b.viewer.Token, "If-Match", etag(rec))...)
	require.Equal(t, http.StatusForbidden, status)
	require.Empty(t, b.outboxPurges(t))

	// A record memory: gone, and its namespace purge queued with the delete.
	// The provider is disabled first: the purge is still owed.
	b.disable(t, "memory", b.tpuf)
	status, out, _ := b.do(t, http.MethodDelete, recPath, nil, "If-Match", etag(rec))
	require.Equal(t, http.StatusNoContent, status, out)
	status, _, _ = b.do(t, http.MethodGet, recPath, nil)
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, []map[string]any{{
		"provider_id": b.tpuf, "namespace": rec["namespace"], "memory_id": rec["id"],
		"_workspace_id": b.admin.WorkspaceID, "_status": "pending",
	}}, b.outboxPurges(t))
	require.Equal(t, "memory.deleted:", b.auditTrail(t, rec["id"].(string))[1])

	// A builtin memory: gone with its records; another memory's records stay.
	require.Equal(t, 2, records(built["id"].(string)))
	status, _, _ = b.do(t, http.MethodDelete, memoriesPath+"/"+built["id"].(string), nil, "If-Match", etag(built))
	require.Equal(t, http.StatusNoContent, status)
	require.Zero(t, records(built["id"].(string)))
	require.Equal(t, 1, records(keep["id"].(string)))
	require.Len(t, b.outboxPurges(t), 1, "builtin memories need no purge")

	// Deleted is deleted: the same request again is 404.
	status, _, _ = b.do(t, http.MethodDelete, memoriesPath+"/"+built["id"].(string), nil, "If-Match", etag(built))
	require.Equal(t, http.StatusNotFound, status)

	// Two deletes holding one ETag: one 204, the other finds nothing.
	last := b.mustMemory(t, map[string]any{"name": "race", "kind": "builtin"})
	statuses := make(chan int, 2)
	for range 2 {
		go func() {
			status, _, _ := b.do(t, http.MethodDelete, memoriesPath+"/"+last["id"].(string), nil, "If-Match", etag(last))
			statuses <- status
		}()
	}
	got := []int{<-statuses, <-statuses}
	require.ElementsMatch(t, []int{http.StatusNoContent, http.StatusNotFound}, got)
}

// TestMemoriesAcrossWorkspaces: another workspace's memory answers exactly
// like a missing one.
func TestMemoriesAcrossWorkspaces(t *testing.T) {
	t.Parallel()
	b := setupMemories(t)
	m := b.mustMemory(t, map[string]any{"name": "mine", "kind": "builtin"})
	other := b.otherWorkspace(t)
	var bodies []string
	for _, memID := range []string{m["id"].(string), "mem_01jd5v6w1q3yb8j8y3tn9z2k7h"} {
		path := memoriesPath + "/" + memID
		status, out, _ := b.do(t, http.MethodGet, path, nil, as(other)...)
		require.Equal(t, http.StatusNotFound, status)
		bodies = append(bodies, errorMessage(t, out))
		status, out, _ = b.do(t, http.MethodPatch, path, map[string]any{"name": "x"}, as(other, "If-Match", etag(m))...)
		require.Equal(t, http.StatusNotFound, status)
		bodies = append(bodies, errorMessage(t, out))
		status, out, _ = b.do(t, http.MethodDelete, path, nil, as(other, "If-Match", "*")...)
		require.Equal(t, http.StatusNotFound, status)
		bodies = append(bodies, errorMessage(t, out))
	}
	require.Equal(t, bodies[:3], bodies[3:])
	_, got, _ := b.do(t, http.MethodGet, memoriesPath+"/"+m["id"].(string), nil)
	require.Equal(t, m, got)
}

// writeRecord stores a record of a builtin memory of the admin's workspace
// as a run's memory_write does, and returns its id.
func (b *memoriesBundle) writeRecord(t *testing.T, memoryID, content, metadata string) string {
	t.Helper()
	recID := id.New("mrec")
	require.NoError(t, b.h.App.Memories.WriteRecord(t.Context(), b.admin.WorkspaceID, memoryID, mem.Record{
		ID: recID, Content: content, Metadata: json.RawMessage(metadata),
	}))
	return recID
}

// recordIDs lists the ids of a page of records, in order.
func recordIDs(t *testing.T, out map[string]any) []string {
	t.Helper()
	items, ok := out["items"].([]any)
	require.True(t, ok, "a page: %v", out)
	ids := []string{}
	for _, it := range items {
		ids = append(ids, it.(map[string]any)["id"].(string))
	}
	return ids
}

func TestMemoryRecordsListAndSearch(t *testing.T) {
	t.Parallel()
	b := setupMemories(t)
	m := b.mustMemory(t, map[string]any{"name": "notes", "kind": "builtin"})
	other := b.mustMemory(t, map[string]any{"name": "other", "kind": "builtin"})
	path := memoriesPath + "/" + m["id"].(string) + "/records"

	status, out, _ := b.do(t, http.MethodGet, path, nil)
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, map[string]any{"items": []any{}, "next_cursor": nil}, out, "no records yet")

	twice := b.writeRecord(t, m["id"].(string), "customer customer: prefers email", `{"run_id":"run_01jd5v6w1q3yb8j8y3tn9z2k7h","n":12345678901234567890}`)
	sale := b.writeRecord(t, m["id"].(string), "50% off <b>every</b> Monday", `{}`)
	once := b.writeRecord(t, m["id"].(string), "the customer asked about refunds", `{}`)
	b.writeRecord(t, other["id"].(string), "customer of another memory", `{}`)

	// Listing: newest first, without scores, metadata as written.
	status, out, _ = b.do(t, http.MethodGet, path, nil, as(b.viewer.Token)...)
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, []string{once, sale, twice}, recordIDs(t, out))
	require.Nil(t, out["next_cursor"])
	first := out["items"].([]any)[2].(map[string]any)
	require.Equal(t, m["id"], first["memory_id"])
	require.Equal(t, "customer customer: prefers email", first["content"])
	require.Nil(t, first["score"])
	require.NotEmpty(t, first["created_at"])
	require.Equal(t, map[string]any{"run_id": "run_01jd5v6w1q3yb8j8y3tn9z2k7h", "n": 12345678901234567890.0}, first["metadata"])
	require.Equal(t, map[string]any{}, out["items"].([]any)[1].(map[string]any)["metadata"])

	// Pages of two.
	status, out, _ = b.do(t, http.MethodGet, path+"?limit=2", nil)
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, []string{once, sale}, recordIDs(t, out))
	status, out, _ = b.do(t, http.MethodGet, path+"?limit=2&cursor="+out["next_cursor"].(string), nil)
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, []string{twice}, recordIDs(t, out))
	require.Nil(t, out["next_cursor"])

	// Searching: matches of the words, best first, scored; a blank q lists.
	status, out, _ = b.do(t, http.MethodGet, path+"?q=Customer", nil)
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, []string{twice, once}, recordIDs(t, out), "the record saying it twice ranks first")
	scores := []float64{}
	for _, it := range out["items"].([]any) {
		scores = append(scores, it.(map[string]any)["score"].(float64))
	}
	require.Greater(t, scores[0], scores[1])
	status, out, _ = b.do(t, http.MethodGet, path+"?q=+++", nil)
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, []string{once, sale, twice}, recordIDs(t, out))

	// A search pages on, one record at a time, and ends.
	var walked []string
	next := ""
	for range 4 {
		status, out, _ = b.do(t, http.MethodGet, path+"?q=customer&limit=1"+next, nil)
		require.Equal(t, http.StatusOK, status, out)
		walked = append(walked, recordIDs(t, out)...)
		if out["next_cursor"] == nil {
			break
		}
		next = "&cursor=" + out["next_cursor"].(string)
	}
	require.Equal(t, []string{twice, once}, walked)
	require.Nil(t, out["next_cursor"])

	// A q without words is a substring, score 0; a full last page of it
	// ends the search.
	status, out, _ = b.do(t, http.MethodGet, path+"?q=%25&limit=1", nil)
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, []string{sale}, recordIDs(t, out))
	require.Equal(t, 0.0, out["items"].([]any)[0].(map[string]any)["score"])
	require.Nil(t, out["next_cursor"])

	// Reading one record.
	status, out, _ = b.do(t, http.MethodGet, path+"/"+sale, nil, as(b.viewer.Token)...)
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, "50% off <b>every</b> Monday", out["content"])
	require.Nil(t, out["score"])
	status, out, _ = b.do(t, http.MethodGet, path+"/mrec_01jd5v6w1q3yb8j8y3tn9z2k7h", nil)
	require.Equal(t, http.StatusNotFound, status, out)
	require.Equal(t, "not_found", errorCode(t, out))
}

func TestMemoryRecordsRefuse(t *testing.T) {
	t.Parallel()
	b := setupMemories(t)
	m := b.mustMemory(t, map[string]any{"name": "notes", "kind": "builtin"})
	path := memoriesPath + "/" + m["id"].(string) + "/records"
	b.writeRecord(t, m["id"].(string), "one", `{}`)
	recID := b.writeRecord(t, m["id"].(string), "two", `{}`)
	_, page, _ := b.do(t, http.MethodGet, path+"?limit=1", nil)
	listCursor := page["next_cursor"].(string)

	cases := []struct {
		name, query, field string
	}{
		{"a control character", "?q=a%01b", "q"},
		{"1001 characters", "?q=" + strings.Repeat("я", 1001), "q"},
		{"a cursor svc did not make", "?cursor=%21%21", "cursor"},
		{"a listing's cursor in a search", "?q=one&cursor=" + listCursor, "cursor"},
	}
	for _, tc := range cases {
		status, out, _ := b.do(t, http.MethodGet, path+tc.query, nil)
		require.Equal(t, http.StatusBadRequest, status, "%s: %v", tc.name, out)
		require.Equal(t, "invalid_argument", errorCode(t, out), tc.name)
		require.Contains(t, fields(t, out), tc.field, tc.name)
	}

	// A record memory's records are its provider's: 409, for a list and a read.
	rec := b.mustMemory(t, map[string]any{"name": "facts", "kind": "record", "memory_provider_id": b.tpuf})
	for _, p := range []string{"/records", "/records?q=x", "/records/" + recID} {
		status, out, _ := b.do(t, http.MethodGet, memoriesPath+"/"+rec["id"].(string)+p, nil)
		require.Equal(t, http.StatusConflict, status, out)
		require.Equal(t, "conflict", errorCode(t, out))
		require.Contains(t, errorMessage(t, out), "record memory")
	}

	// Another workspace's memory answers like a missing one.
	foreign := b.otherWorkspace(t)
	var bodies []string
	for _, memID := range []string{m["id"].(string), "mem_01jd5v6w1q3yb8j8y3tn9z2k7h"} {
		for _, p := range []string{"/records", "/records?q=one", "/records/" + recID} {
			status, out, _ := b.do(t, http.MethodGet, memoriesPath+"/"+memID+p, nil, as(foreign)...)
			require.Equal(t, http.StatusNotFound, status, out)
			bodies = append(bodies, errorMessage(t, out))
		}
	}
	require.Equal(t, bodies[:3], bodies[3:])
	// Another memory of the workspace does not answer for this one's records.
	other := b.mustMemory(t, map[string]any{"name": "other", "kind": "builtin"})
	status, out, _ := b.do(t, http.MethodGet, memoriesPath+"/"+other["id"].(string)+"/records/"+recID, nil)
	require.Equal(t, http.StatusNotFound, status, out)
}
