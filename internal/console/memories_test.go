package console_test

import (
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/memory"
	"github.com/svcdev/svc/internal/testfactory"
)

func TestEditorsCreateRenameAndDeleteMemories(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br, _ := b.signedInMember(t, "editor")
	memories := b.workspacePath("memories")

	empty := br.get(t, memories)
	require.Equal(t, http.StatusOK, empty.status, empty.body)
	requirePageHeaders(t, empty)
	require.Contains(t, empty.body, "No memories yet")

	// A record memory needs a provider: refused beside the field, input kept.
	p := br.submit(t, memories, memories, url.Values{"name": {"facts"}, "kind": {"record"}})
	require.Equal(t, http.StatusUnprocessableEntity, p.status, p.body)
	require.Regexp(t, `field-error[^>]*>is required for a record memory`, p.body)
	require.Contains(t, p.body, `<option value="record" selected>`)

	p = br.submit(t, memories, memories, url.Values{"name": {"<b>facts</b>"}, "description": {"what we learnt"}, "kind": {"builtin"}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	loc := p.header.Get("Location")
	require.Regexp(t, `^`+regexp.QuoteMeta(memories)+`/mem_[0-9a-z]+$`, loc)
	page := br.get(t, loc)
	require.Equal(t, http.StatusOK, page.status, page.body)
	require.Contains(t, page.body, "is made")
	require.Contains(t, page.body, "&lt;b&gt;facts&lt;/b&gt;")
	require.NotContains(t, page.body, "<b>facts</b>")
	list := br.get(t, memories)
	require.Contains(t, list.body, `href="`+loc+`"`)

	// Renaming with the page's ETag works once; the same ETag again is stale.
	form := rowForm(t, page.body, loc)
	form.Set("name", "facts")
	p = br.post(t, loc, form)
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	require.Contains(t, br.get(t, loc).body, "<h1>Memory facts</h1>")
	form.Set("name", "other")
	p = br.post(t, loc, form)
	require.Equal(t, http.StatusPreconditionFailed, p.status, p.body)
	require.Contains(t, p.body, "changed since you opened it")
	require.Contains(t, p.body, `value="other"`)

	del := rowForm(t, br.get(t, loc).body, loc+"/delete")
	p = br.post(t, loc+"/delete", del)
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	require.Equal(t, memories, p.header.Get("Location"))
	require.Equal(t, http.StatusNotFound, br.get(t, loc).status)
}

func TestViewersSeeMemoriesReadOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	editor, _ := b.signedInMember(t, "editor")
	memories := b.workspacePath("memories")
	p := editor.submit(t, memories, memories, url.Values{"name": {"facts"}, "kind": {"builtin"}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	loc := p.header.Get("Location")

	viewer, _ := b.signedInMember(t, "viewer")
	list := viewer.get(t, memories)
	require.Equal(t, http.StatusOK, list.status, list.body)
	require.Contains(t, list.body, "facts")
	require.NotContains(t, list.body, "Create memory")
	page := viewer.get(t, loc)
	require.Equal(t, http.StatusOK, page.status, page.body)
	require.NotContains(t, page.body, "<form class=\"stack\"")
	require.NotContains(t, page.body, "Delete memory")
	csrf := hiddenFields(page.body)["csrf_token"]
	for _, path := range []string{memories, loc, loc + "/delete"} {
		p := viewer.post(t, path, url.Values{"csrf_token": {csrf}, "name": {"x"}, "kind": {"builtin"}})
		require.Equal(t, http.StatusForbidden, p.status, path)
	}
}

// writeRecord stores a record of a builtin memory of the bootstrap
// workspace as a run's memory_write does, and returns its id.
func (b *testBundle) writeRecord(t *testing.T, memoryID, content, metadata string) string {
	t.Helper()
	recID := id.New("mrec")
	require.NoError(t, b.h.App.Memories.WriteRecord(t.Context(), b.admin.WorkspaceID, memoryID, memory.Record{
		ID: recID, Content: content, Metadata: json.RawMessage(metadata),
	}))
	return recID
}

func TestViewersBrowseAndSearchMemoryRecords(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m, err := b.h.App.Memories.Create(t.Context(), b.admin.Caller("admin"), memory.CreateInput{Name: "notes", Kind: memory.KindBuiltin})
	require.NoError(t, err)
	viewer, _ := b.signedInMember(t, "viewer")
	page := viewer.get(t, b.workspacePath("memories", m.ID))
	require.Equal(t, http.StatusOK, page.status, page.body)
	records := b.workspacePath("memories", m.ID, "records")
	require.Contains(t, page.body, `href="`+records+`"`)
	require.Contains(t, page.body, `action="`+records+`"`)

	empty := viewer.get(t, records)
	require.Equal(t, http.StatusOK, empty.status, empty.body)
	requirePageHeaders(t, empty)
	require.Contains(t, empty.body, "<h1>Records of notes</h1>")
	require.Contains(t, empty.body, "No records yet")

	twice := b.writeRecord(t, m.ID, "customer customer: prefers email", `{"run_id":"run_01jd5v6w1q3yb8j8y3tn9z2k7h"}`)
	script := b.writeRecord(t, m.ID, `<img src=x onerror="alert(1)"> the customer asked`, `{}`)
	sale := b.writeRecord(t, m.ID, "50% off on Mondays", `{}`)

	// Newest first, content and metadata escaped and shown.
	list := viewer.get(t, records)
	require.Equal(t, http.StatusOK, list.status, list.body)
	requirePageHeaders(t, list)
	require.Less(t, strings.Index(list.body, sale), strings.Index(list.body, script))
	require.Less(t, strings.Index(list.body, script), strings.Index(list.body, twice))
	require.Contains(t, list.body, "&lt;img src=x onerror=&#34;alert(1)&#34;&gt; the customer asked")
	require.NotContains(t, list.body, `<img src=x`)
	require.Contains(t, list.body, "run_01jd5v6w1q3yb8j8y3tn9z2k7h")
	require.NotContains(t, list.body, "score")
	require.NotContains(t, list.body, "Next page")

	// A search: best first, scored, the query kept in its field.
	found := viewer.get(t, records+"?q=customer")
	require.Equal(t, http.StatusOK, found.status, found.body)
	require.Contains(t, found.body, `value="customer"`)
	require.Contains(t, found.body, "Best matches")
	require.Contains(t, found.body, "score")
	require.Less(t, strings.Index(found.body, twice), strings.Index(found.body, script))
	require.NotContains(t, found.body, sale)
	none := viewer.get(t, records+"?q=refund")
	require.Equal(t, http.StatusOK, none.status, none.body)
	require.Contains(t, none.body, "No records match this search")

	// A refused search is explained beside its field, the text kept.
	bad := viewer.get(t, records+"?q="+url.QueryEscape("a\x01b"))
	require.Equal(t, http.StatusOK, bad.status, bad.body)
	require.Regexp(t, `field-error[^>]*>must not contain control characters`, bad.body)
	bad = viewer.get(t, records+"?cursor=bm90IGFuIGlk")
	require.Equal(t, http.StatusOK, bad.status, bad.body)
	require.Regexp(t, `field-error[^>]*>not a cursor`, bad.body)
	require.NotContains(t, bad.body, "No records yet")

	// Pages of 50, the search kept across them.
	for i := range 50 {
		b.writeRecord(t, m.ID, "customer note "+strconv.Itoa(i), `{}`)
	}
	first := viewer.get(t, records+"?q=customer")
	require.Equal(t, http.StatusOK, first.status, first.body)
	require.Equal(t, 50, strings.Count(first.body, "<code>mrec_"), "a page of 50 records")
	next := regexp.MustCompile(`<nav class="pager"[^>]*><a href="([^"]+)"`).FindStringSubmatch(first.body)
	require.Len(t, next, 2, "a link to the next page")
	nextPath := html.UnescapeString(next[1])
	require.Contains(t, nextPath, "q=customer")
	second := viewer.get(t, nextPath)
	require.Equal(t, http.StatusOK, second.status, second.body)
	require.Equal(t, 2, strings.Count(second.body, "<code>mrec_"), "the two records the first page left")
	require.NotContains(t, second.body, "Next page")
	require.Contains(t, second.body, script, "the record mentioning it once ranks last")
}

func TestMemoryRecordsPageOfARecordMemoryAndOfAnotherWorkspace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := testfactory.Provider(t, b.h.App.Pool, b.admin.Owner(), &testfactory.ProviderOpts{Kind: "memory", Type: "turbopuffer", Config: json.RawMessage(`{"region":"gcp-us-central1"}`)})
	rec, err := b.h.App.Memories.Create(t.Context(), b.admin.Caller("admin"), memory.CreateInput{Name: "facts", Kind: memory.KindRecord, ProviderID: &p.ID})
	require.NoError(t, err)
	br, _ := b.signedInMember(t, "editor")

	page := br.get(t, b.workspacePath("memories", rec.ID))
	require.Equal(t, http.StatusOK, page.status, page.body)
	require.NotContains(t, page.body, "Browse the records", "a record memory's records are its provider's")
	records := br.get(t, b.workspacePath("memories", rec.ID, "records"))
	require.Equal(t, http.StatusOK, records.status, records.body)
	require.Contains(t, records.body, "is a record memory")
	require.Contains(t, records.body, "keeps its records with its memory provider")
	require.NotContains(t, records.body, `role="search"`)

	// Another workspace's memory is not found, like a missing one.
	ws := testfactory.Workspace(t, b.h.App.Pool, b.admin.OrganizationID, b.admin.PrincipalID, nil)
	foreign, err := b.h.App.Memories.Create(t.Context(), &auth.Caller{
		OrganizationID: b.admin.OrganizationID, WorkspaceID: ws.ID, PrincipalID: b.admin.PrincipalID, Role: auth.RoleAdmin,
	}, memory.CreateInput{Name: "theirs", Kind: memory.KindBuiltin})
	require.NoError(t, err)
	for _, memID := range []string{foreign.ID, "mem_01jd5v6w1q3yb8j8y3tn9z2k7h"} {
		got := br.get(t, b.workspacePath("memories", memID, "records"))
		require.Equal(t, http.StatusNotFound, got.status, got.body)
	}
}
