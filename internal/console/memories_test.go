package console_test

import (
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
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
