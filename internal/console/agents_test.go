package console_test

import (
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/revision"
	"github.com/svcdev/svc/internal/testfactory"
)

// agentsBundle is a test bundle with the model "main" and a signed-in admin.
type agentsBundle struct {
	*testBundle
	br *browser
}

func setupAgentsPages(t *testing.T) *agentsBundle {
	t.Helper()
	b := setup(t)
	testfactory.Model(t, b.h.App.Pool, b.admin.Owner(), nil)
	br := b.browser(t)
	br.signIn(t, b.admin.Email, adminPassword)
	return &agentsBundle{testBundle: b, br: br}
}

// agent creates an agent through the service, as the admin.
func (b *agentsBundle) agent(t *testing.T, name string, labels map[string]string, cfg string) revision.Head {
	t.Helper()
	h, err := b.h.App.Agents.Create(t.Context(), b.admin.Caller("admin"), revision.CreateInput{Name: name, Labels: labels, Config: json.RawMessage(cfg)})
	require.NoError(t, err)
	return h
}

// names are the names the list page links to, in order.
func names(body string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<td><a href="/w/[^/]+/(?:agents|skills)/[a-z]+_[a-z0-9]+">([^<]*)</a>`).FindAllStringSubmatch(body, -1) {
		out = append(out, html.UnescapeString(m[1]))
	}
	return out
}

// etagOf is the ETag a page's forms carry for a head.
func etagOf(h revision.Head) string { return h.ETag() }

func TestAgentsListFiltersAndPages(t *testing.T) {
	t.Parallel()
	b := setupAgentsPages(t)

	// No agents yet: the empty list says how to make one.
	p := b.br.get(t, b.workspacePath("agents"))
	require.Equal(t, http.StatusOK, p.status, p.body)
	requirePageHeaders(t, p)
	require.Contains(t, p.body, "No agents yet.")
	require.Contains(t, p.body, `href="`+b.workspacePath("agents", "new")+`">New agent</a>`)

	b.agent(t, "search-one", map[string]string{"team": "search", "tier": "gold"}, `{"model":"main"}`)
	b.agent(t, "ops", map[string]string{"team": "ops"}, `{"model":"main"}`)
	old := b.agent(t, "search-old", map[string]string{"team": "search"}, `{"model":"main"}`)
	_, err := b.h.App.Agents.Archive(t.Context(), b.admin.Caller("admin"), old.ID, ptr(old.ETag()))
	require.NoError(t, err)

	p = b.br.get(t, b.workspacePath("agents"))
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Equal(t, []string{"search-old", "ops", "search-one"}, names(p.body))
	require.Contains(t, p.body, `<a class="badge" href="`+b.workspacePath("agents")+`?label=team:search">team=search</a>`)
	require.Contains(t, p.body, `<span class="status status-archived">archived</span>`)
	require.Contains(t, p.body, `<form class="filters" method="get"`)

	// Label selectors in the API's key:value syntax, all of which must match.
	p = b.br.get(t, b.workspacePath("agents")+"?label=team:search")
	require.Equal(t, []string{"search-old", "search-one"}, names(p.body))
	require.Contains(t, p.body, `name="label" value="team:search"`)
	p = b.br.get(t, b.workspacePath("agents")+"?label=team:search&label=tier:gold")
	require.Equal(t, []string{"search-one"}, names(p.body))
	p = b.br.get(t, b.workspacePath("agents")+"?label=team:nobody")
	require.Empty(t, names(p.body))
	require.Contains(t, p.body, "No agents match these filters.")
	p = b.br.get(t, b.workspacePath("agents")+"?label=Not+A+Selector")
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "a selector is key:value")

	// Archived or not, and search text.
	p = b.br.get(t, b.workspacePath("agents")+"?archived=true")
	require.Equal(t, []string{"search-old"}, names(p.body))
	require.Contains(t, p.body, `<option value="true" selected>`)
	p = b.br.get(t, b.workspacePath("agents")+"?archived=false&label=team:search")
	require.Equal(t, []string{"search-one"}, names(p.body))
	p = b.br.get(t, b.workspacePath("agents")+"?q=OPS")
	require.Equal(t, []string{"ops"}, names(p.body))

	// Pages keep the filters.
	p = b.br.get(t, b.workspacePath("agents")+"?limit=2&archived=false&label=")
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Equal(t, []string{"ops", "search-one"}, names(p.body))
	b.agent(t, "newest", nil, `{"model":"main"}`)
	p = b.br.get(t, b.workspacePath("agents")+"?limit=2&archived=false")
	require.Equal(t, []string{"newest", "ops"}, names(p.body))
	next := regexp.MustCompile(`<nav class="pager" aria-label="Pages"><a href="([^"]+)">`).FindStringSubmatch(p.body)
	require.NotNil(t, next, p.body)
	nextURL := html.UnescapeString(next[1])
	require.Contains(t, nextURL, "archived=false")
	p = b.br.get(t, nextURL)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Equal(t, []string{"search-one"}, names(p.body))
	require.NotContains(t, p.body, `class="pager"`)
}

func TestAgentCreateShowsRefusalsByFieldPathAndKeepsTheJSON(t *testing.T) {
	t.Parallel()
	b := setupAgentsPages(t)
	form := b.br.get(t, b.workspacePath("agents", "new"))
	require.Equal(t, http.StatusOK, form.status, form.body)
	require.Contains(t, form.body, `<textarea class="code config" name="config"`)

	// Every refusal of the configuration is listed with its path; what was
	// typed is kept.
	bad := `{"model": "", "limits": {"max_steps": 0}, "skills": [{"skill_id": ""}]}`
	p := b.br.submit(t, b.workspacePath("agents", "new"), b.workspacePath("agents", "new"), url.Values{
		"name": {"helper"}, "description": {"Helps."}, "labels": {"team=search\ntier = gold"}, "config": {bad},
	})
	require.Equal(t, http.StatusUnprocessableEntity, p.status, p.body)
	requirePageHeaders(t, p)
	require.Contains(t, p.body, "Check the fields marked below.")
	require.Contains(t, p.body, "<li><code>config.limits.max_steps</code> must be 1 to 1000</li>")
	require.Contains(t, p.body, "<li><code>config.model</code> is required: the key of a model of the workspace</li>")
	require.Contains(t, p.body, "<li><code>config.skills[0].skill_id</code> is required</li>")
	require.Contains(t, p.body, html.EscapeString(bad))
	require.Contains(t, p.body, `value="helper"`)
	require.Contains(t, p.body, "team=search\ntier = gold</textarea>")

	// A model the workspace does not have is refused by its path too.
	p = b.br.submit(t, b.workspacePath("agents", "new"), b.workspacePath("agents", "new"), url.Values{
		"name": {"helper"}, "config": {`{"model": "nope"}`},
	})
	require.Equal(t, http.StatusNotFound, p.status, p.body)
	require.Contains(t, p.body, "<li><code>config.model</code> no model with this key in the workspace</li>")

	// A disabled model is a 409 that still names the field.
	testfactory.Model(t, b.h.App.Pool, b.admin.Owner(), &testfactory.ModelOpts{Key: "off", Disabled: true})
	p = b.br.submit(t, b.workspacePath("agents", "new"), b.workspacePath("agents", "new"), url.Values{
		"name": {"helper"}, "config": {`{"model": "off"}`},
	})
	require.Equal(t, http.StatusConflict, p.status, p.body)
	require.Contains(t, p.body, "<li><code>config.model</code> the model is disabled</li>")

	// JSON that does not parse, and labels that are not key=value.
	p = b.br.submit(t, b.workspacePath("agents", "new"), b.workspacePath("agents", "new"), url.Values{
		"name": {"helper"}, "config": {`{"model": "main",}`},
	})
	require.Equal(t, http.StatusUnprocessableEntity, p.status, p.body)
	require.Contains(t, p.body, "<li><code>config</code> must be an agent configuration object")
	p = b.br.submit(t, b.workspacePath("agents", "new"), b.workspacePath("agents", "new"), url.Values{
		"name": {"helper"}, "labels": {"just a word"}, "config": {`{"model": "main"}`},
	})
	require.Equal(t, http.StatusUnprocessableEntity, p.status, p.body)
	require.Contains(t, p.body, "line 1: write each label as key=value")
	p = b.br.submit(t, b.workspacePath("agents", "new"), b.workspacePath("agents", "new"), url.Values{
		"name": {"helper"}, "labels": {"Bad Key=1"}, "config": {`{"model": "main"}`},
	})
	require.Equal(t, http.StatusUnprocessableEntity, p.status, p.body)
	require.Contains(t, p.body, "<code>labels</code>: ")

	// A valid form creates the agent and goes to its page.
	p = b.br.submit(t, b.workspacePath("agents", "new"), b.workspacePath("agents", "new"), url.Values{
		"name": {"helper"}, "description": {"Helps."}, "labels": {"team=search\ntier = gold\n"}, "config": {`{"model": "main", "instructions": "Be brief."}`},
	})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	loc := p.header.Get("Location")
	require.Regexp(t, `^/w/[^/]+/agents/ap_[a-z0-9]+$`, loc)
	head := b.br.get(t, loc)
	require.Equal(t, http.StatusOK, head.status, head.body)
	require.Contains(t, head.body, "is created with revision 1 as its default")
	require.Contains(t, head.body, "<h1>helper</h1>")
	require.Contains(t, head.body, `<span class="badge">team=search</span> <span class="badge">tier=gold</span>`)
	require.Contains(t, head.body, `<span class="status status-active">default</span>`)

	id := strings.TrimPrefix(loc, b.workspacePath("agents")+"/")
	h, err := b.h.App.Agents.Get(t.Context(), b.admin.Caller("viewer"), id)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"team": "search", "tier": "gold"}, h.Labels)
	require.Equal(t, "Helps.", h.Description)
	rev := b.br.get(t, loc+"/revisions/"+h.DefaultRevisionID)
	require.Equal(t, http.StatusOK, rev.status, rev.body)
	require.Contains(t, rev.body, "Revision 1")
	require.Contains(t, rev.body, "&#34;instructions&#34;: &#34;Be brief.&#34;,\n")
	require.Contains(t, rev.body, "&#34;max_steps&#34;: 100,\n", "the stored configuration is normalized")
}

func TestAgentPublishRollBackArchiveAndEdit(t *testing.T) {
	t.Parallel()
	b := setupAgentsPages(t)
	a := b.agent(t, "writer", map[string]string{"team": "docs"}, `{"model":"main","instructions":"v1"}`)
	headPath := b.workspacePath("agents", a.ID)
	rev1 := a.DefaultRevisionID

	// The editor starts from the default revision's configuration.
	form := b.br.get(t, headPath+"/publish")
	require.Equal(t, http.StatusOK, form.status, form.body)
	require.Contains(t, form.body, "&#34;instructions&#34;: &#34;v1&#34;")
	require.Contains(t, form.body, `name="make_default" value="on" checked`)

	// A refused configuration keeps what was typed.
	p := b.br.submit(t, headPath+"/publish", headPath+"/publish", url.Values{"config": {`{"model":"main","limits":{"timeout_seconds":-1}}`}, "make_default": {"on"}})
	require.Equal(t, http.StatusUnprocessableEntity, p.status, p.body)
	require.Contains(t, p.body, "<li><code>config.limits.timeout_seconds</code> must be 1 to 86400</li>")
	require.Contains(t, p.body, "&#34;timeout_seconds&#34;:-1")

	// Publishing makes revision 2 the default.
	p = b.br.submit(t, headPath+"/publish", headPath+"/publish", url.Values{"config": {`{"model":"main","instructions":"v2"}`}, "make_default": {"on"}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	page := b.br.get(t, p.header.Get("Location"))
	require.Equal(t, http.StatusOK, page.status, page.body)
	require.Contains(t, page.body, "Revision 2 of writer is published and is its default")
	require.Contains(t, page.body, "&#34;instructions&#34;: &#34;v2&#34;")
	cur, err := b.h.App.Agents.Get(t.Context(), b.admin.Caller("admin"), a.ID)
	require.NoError(t, err)
	rev2 := cur.DefaultRevisionID
	require.NotEqual(t, rev1, rev2)

	// The same configuration again publishes nothing.
	p = b.br.submit(t, headPath+"/publish", headPath+"/publish", url.Values{"config": {`{"instructions":"v2","model":"main"}`}, "make_default": {"on"}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	require.Contains(t, b.br.get(t, p.header.Get("Location")).body, "nothing was published")

	// Unchecked, a revision is kept without becoming the default.
	p = b.br.submit(t, headPath+"/publish", headPath+"/publish", url.Values{"config": {`{"model":"main","instructions":"v3"}`}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	require.Contains(t, b.br.get(t, p.header.Get("Location")).body, "The default revision is unchanged.")

	// The head lists its revisions, newest first, with the default marked and
	// a roll-back form on the others.
	head := b.br.get(t, headPath)
	require.Equal(t, http.StatusOK, head.status, head.body)
	nums := regexp.MustCompile(`<td class="num"><a href="[^"]+/revisions/(rev_[a-z0-9]+)">(\d+)</a></td>`).FindAllStringSubmatch(head.body, -1)
	require.Len(t, nums, 3)
	require.Equal(t, []string{"3", "2", "1"}, []string{nums[0][2], nums[1][2], nums[2][2]})
	require.Equal(t, rev2, nums[1][1])
	require.Equal(t, 1, strings.Count(head.body, `<span class="status status-active">default</span>`))
	require.Equal(t, 2, strings.Count(head.body, `>Make default</button>`))
	cur, err = b.h.App.Agents.Get(t.Context(), b.admin.Caller("admin"), a.ID)
	require.NoError(t, err)
	require.Contains(t, head.body, `name="etag" value="`+html.EscapeString(etagOf(cur))+`"`)

	// Roll back to revision 1 with the page's ETag; a stale one is refused.
	csrf := hiddenFields(head.body)["csrf_token"]
	p = b.br.post(t, headPath+"/default", url.Values{"csrf_token": {csrf}, "etag": {etagOf(a)}, "revision": {rev1}})
	require.Equal(t, http.StatusPreconditionFailed, p.status, p.body)
	require.Contains(t, p.body, "This changed since you opened it")
	other := b.agent(t, "other", nil, `{"model":"main"}`)
	p = b.br.post(t, headPath+"/default", url.Values{"csrf_token": {csrf}, "etag": {etagOf(cur)}, "revision": {other.DefaultRevisionID}})
	require.Equal(t, http.StatusNotFound, p.status, p.body)
	require.Contains(t, p.body, "No revision with this id belongs to this agent.")
	require.Contains(t, p.body, "<h1>writer</h1>")
	p = b.br.post(t, headPath+"/default", url.Values{"csrf_token": {csrf}, "etag": {etagOf(cur)}, "revision": {rev1}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	require.Equal(t, headPath, p.header.Get("Location"))
	require.Contains(t, b.br.get(t, headPath).body, "The default revision of writer is "+rev1)
	cur, err = b.h.App.Agents.Get(t.Context(), b.admin.Caller("admin"), a.ID)
	require.NoError(t, err)
	require.Equal(t, rev1, cur.DefaultRevisionID)

	// Archive: no publishing until unarchived.
	p = b.br.post(t, headPath+"/archive", url.Values{"csrf_token": {csrf}, "etag": {etagOf(cur)}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	head = b.br.get(t, headPath)
	require.Contains(t, head.body, "is archived.")
	require.Contains(t, head.body, `<span class="status status-archived">archived</span>`)
	require.Contains(t, head.body, `>Unarchive</button>`)
	require.NotContains(t, head.body, `>Publish a revision</a>`)
	p = b.br.post(t, headPath+"/publish", url.Values{"csrf_token": {csrf}, "config": {`{"model":"main","instructions":"v4"}`}})
	require.Equal(t, http.StatusConflict, p.status, p.body)
	require.Contains(t, p.body, "unarchive it before publishing")
	cur, err = b.h.App.Agents.Get(t.Context(), b.admin.Caller("admin"), a.ID)
	require.NoError(t, err)
	require.True(t, cur.Archived())
	p = b.br.post(t, headPath+"/unarchive", url.Values{"csrf_token": {csrf}, "etag": {etagOf(cur)}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	require.Contains(t, b.br.get(t, headPath).body, "is active again.")
	p = b.br.post(t, headPath+"/unarchive", url.Values{"csrf_token": {csrf}, "etag": {etagOf(cur)}})
	require.Equal(t, http.StatusPreconditionFailed, p.status, p.body)

	// Edit: the form is filled in; a save after someone else's is refused,
	// with what was typed kept; a fresh one saves.
	edit := b.br.get(t, headPath+"/edit")
	require.Equal(t, http.StatusOK, edit.status, edit.body)
	require.Contains(t, edit.body, `value="writer"`)
	require.Contains(t, edit.body, "team=docs\n</textarea>")
	hidden := hiddenFields(edit.body)
	renamed := "renamed elsewhere"
	cur, err = b.h.App.Agents.Get(t.Context(), b.admin.Caller("admin"), a.ID)
	require.NoError(t, err)
	_, err = b.h.App.Agents.Update(t.Context(), b.admin.Caller("admin"), revision.UpdateInput{ID: a.ID, IfMatch: ptr(cur.ETag()), Name: &renamed})
	require.NoError(t, err)
	p = b.br.post(t, headPath+"/edit", url.Values{"csrf_token": {hidden["csrf_token"]}, "etag": {hidden["etag"]},
		"name": {"mine"}, "description": {"Mine."}, "labels": {"team=docs\nowner=me"}})
	require.Equal(t, http.StatusPreconditionFailed, p.status, p.body)
	require.Contains(t, p.body, "This changed since you opened it")
	require.Contains(t, p.body, `value="mine"`)
	require.Contains(t, p.body, "team=docs\nowner=me</textarea>")
	cur, err = b.h.App.Agents.Get(t.Context(), b.admin.Caller("admin"), a.ID)
	require.NoError(t, err)
	require.Equal(t, renamed, cur.Name)

	p = b.br.submit(t, headPath+"/edit", headPath+"/edit", url.Values{"name": {"mine"}, "description": {"Mine."}, "labels": {"owner=me"}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	cur, err = b.h.App.Agents.Get(t.Context(), b.admin.Caller("admin"), a.ID)
	require.NoError(t, err)
	require.Equal(t, "mine", cur.Name)
	require.Equal(t, "Mine.", cur.Description)
	require.Equal(t, map[string]string{"owner": "me"}, cur.Labels)

	// An empty name is refused beside its field.
	p = b.br.submit(t, headPath+"/edit", headPath+"/edit", url.Values{"name": {""}, "labels": {""}})
	require.Equal(t, http.StatusUnprocessableEntity, p.status, p.body)
	require.Regexp(t, `field-error[^>]*>must have 1 to 200 characters</span>`, p.body)

	// Unknown heads and revisions are 404.
	require.Equal(t, http.StatusNotFound, b.br.get(t, b.workspacePath("agents", "ap_nothing")).status)
	require.Equal(t, http.StatusNotFound, b.br.get(t, headPath+"/revisions/rev_nothing").status)
}

func TestAgentsAreReadOnlyForViewers(t *testing.T) {
	t.Parallel()
	b := setupAgentsPages(t)
	a := b.agent(t, "shown", nil, `{"model":"main"}`)
	_, err := b.h.App.Agents.Publish(t.Context(), b.admin.Caller("admin"), revision.PublishInput{HeadID: a.ID, Config: json.RawMessage(`{"model":"main","instructions":"v2"}`)})
	require.NoError(t, err)
	viewer, _ := b.signedInMember(t, "viewer")

	list := viewer.get(t, b.workspacePath("agents"))
	require.Equal(t, http.StatusOK, list.status, list.body)
	require.Equal(t, []string{"shown"}, names(list.body))
	require.NotContains(t, list.body, ">New agent<")
	head := viewer.get(t, b.workspacePath("agents", a.ID))
	require.Equal(t, http.StatusOK, head.status, head.body)
	require.NotContains(t, head.body, `method="post" action="/w/`+b.admin.WorkspaceID+`/agents`)
	require.NotContains(t, head.body, "Publish a revision")
	require.NotContains(t, head.body, "Make default")
	require.NotContains(t, head.body, ">Edit<")
	rev := viewer.get(t, b.workspacePath("agents", a.ID, "revisions", a.DefaultRevisionID))
	require.Equal(t, http.StatusOK, rev.status, rev.body)
	require.NotContains(t, rev.body, "Make default")
	require.NotContains(t, rev.body, "Publish a revision")

	// The forms' pages and the changes are refused.
	for _, path := range []string{b.workspacePath("agents", "new"), b.workspacePath("agents", a.ID, "publish"), b.workspacePath("agents", a.ID, "edit")} {
		require.Equal(t, http.StatusForbidden, viewer.get(t, path).status, path)
	}
	csrf := hiddenFields(head.body)["csrf_token"]
	for _, action := range []string{"new", a.ID + "/publish", a.ID + "/edit", a.ID + "/default", a.ID + "/archive", a.ID + "/unarchive"} {
		p := viewer.post(t, b.workspacePath("agents", action), url.Values{"csrf_token": {csrf}, "name": {"x"}, "config": {`{"model":"main"}`},
			"etag": {a.ETag()}, "revision": {a.DefaultRevisionID}})
		require.Equal(t, http.StatusForbidden, p.status, action)
	}
	cur, err := b.h.App.Agents.Get(t.Context(), b.admin.Caller("admin"), a.ID)
	require.NoError(t, err)
	require.False(t, cur.Archived())
	require.Equal(t, "shown", cur.Name)
}

func TestAgentNamesAndConfigurationsAreShownEscaped(t *testing.T) {
	t.Parallel()
	b := setupAgentsPages(t)
	const evil = `<script>alert(1)</script>`
	a := b.agent(t, evil, map[string]string{"x": `"><b>`}, `{"model":"main","instructions":"</pre><script>alert(2)</script>"}`)
	a, err := b.h.App.Agents.Update(t.Context(), b.admin.Caller("admin"), revision.UpdateInput{ID: a.ID, IfMatch: ptr(a.ETag()), Description: ptr(evil)})
	require.NoError(t, err)
	for _, path := range []string{
		b.workspacePath("agents"), b.workspacePath("agents", a.ID), b.workspacePath("agents", a.ID, "edit"),
		b.workspacePath("agents", a.ID, "publish"), b.workspacePath("agents", a.ID, "revisions", a.DefaultRevisionID),
	} {
		p := b.br.get(t, path)
		require.Equal(t, http.StatusOK, p.status, path)
		requirePageHeaders(t, p)
		require.NotContains(t, p.body, "<script>alert", path)
		require.NotContains(t, p.body, `"><b>`, path)
	}
	p := b.br.get(t, b.workspacePath("agents", a.ID))
	require.Contains(t, p.body, "<h1>&lt;script&gt;alert(1)&lt;/script&gt;</h1>")
}

func TestSkillsPages(t *testing.T) {
	t.Parallel()
	b := setupAgentsPages(t)

	p := b.br.get(t, b.workspacePath("skills"))
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "No skills yet.")
	require.Contains(t, p.body, `href="`+b.workspacePath("skills", "new")+`">New skill</a>`)

	form := b.br.get(t, b.workspacePath("skills", "new"))
	require.Equal(t, http.StatusOK, form.status, form.body)
	require.Contains(t, form.body, `package.asset_id`)

	// A skill's configuration is refused by its own paths.
	p = b.br.submit(t, b.workspacePath("skills", "new"), b.workspacePath("skills", "new"), url.Values{
		"name": {"pdf"}, "config": {`{"instructions": " ", "package": {"asset_id": ""}}`},
	})
	require.Equal(t, http.StatusUnprocessableEntity, p.status, p.body)
	require.Contains(t, p.body, "<li><code>config.instructions</code> is required</li>")
	require.Contains(t, p.body, "<li><code>config.package.asset_id</code> is required</li>")
	p = b.br.submit(t, b.workspacePath("skills", "new"), b.workspacePath("skills", "new"), url.Values{
		"name": {"pdf"}, "config": {`{"instructions": "Fill PDFs.", "package": {"asset_id": "as_nothing"}}`},
	})
	require.Equal(t, http.StatusNotFound, p.status, p.body)
	require.Contains(t, p.body, "<li><code>config.package.asset_id</code> ")

	p = b.br.submit(t, b.workspacePath("skills", "new"), b.workspacePath("skills", "new"), url.Values{
		"name": {"pdf"}, "labels": {"kind=docs"}, "config": {`{"instructions": "Fill PDFs.", "metadata": {"license": "MIT"}}`},
	})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	headPath := p.header.Get("Location")
	require.Regexp(t, `^/w/[^/]+/skills/sk_[a-z0-9]+$`, headPath)

	// Publish, roll back, and the list with its filters.
	p = b.br.submit(t, headPath+"/publish", headPath+"/publish", url.Values{"config": {`{"instructions": "Fill PDF forms."}`}, "make_default": {"on"}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	rev := b.br.get(t, p.header.Get("Location"))
	require.Contains(t, rev.body, "Revision 2 of pdf is published")
	require.Contains(t, rev.body, "&#34;metadata&#34;: {}")
	head := b.br.get(t, headPath)
	require.Equal(t, 1, strings.Count(head.body, `>Make default</button>`))
	id := strings.TrimPrefix(headPath, b.workspacePath("skills")+"/")
	revs, err := b.h.App.Skills.ListRevisions(t.Context(), b.admin.Caller("admin"), id, nil, nil)
	require.NoError(t, err)
	require.Len(t, revs.Items, 2)
	h, err := b.h.App.Skills.Get(t.Context(), b.admin.Caller("admin"), id)
	require.NoError(t, err)
	p = b.br.post(t, headPath+"/default", url.Values{"csrf_token": {hiddenFields(head.body)["csrf_token"]}, "etag": {h.ETag()}, "revision": {revs.Items[1].ID}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	h, err = b.h.App.Skills.Get(t.Context(), b.admin.Caller("admin"), id)
	require.NoError(t, err)
	require.Equal(t, revs.Items[1].ID, h.DefaultRevisionID)

	require.Equal(t, []string{"pdf"}, names(b.br.get(t, b.workspacePath("skills")+"?label=kind:docs").body))
	require.Empty(t, names(b.br.get(t, b.workspacePath("skills")+"?archived=true").body))

	// Agents link to the skills they use.
	a := b.agent(t, "uses-pdf", nil, `{"model":"main","skills":[{"skill_id":"`+id+`"}]}`)
	p = b.br.get(t, b.workspacePath("agents", a.ID, "revisions", a.DefaultRevisionID))
	require.Contains(t, p.body, `<a href="`+headPath+`">Skill `+id+`, its default revision</a>`)

	// Viewers read skills and change nothing.
	viewer, _ := b.signedInMember(t, "viewer")
	vp := viewer.get(t, headPath)
	require.Equal(t, http.StatusOK, vp.status, vp.body)
	require.NotContains(t, vp.body, "Make default")
	require.NotContains(t, vp.body, ">Archive</button>")
	p = viewer.post(t, headPath+"/archive", url.Values{"csrf_token": {hiddenFields(vp.body)["csrf_token"]}, "etag": {h.ETag()}})
	require.Equal(t, http.StatusForbidden, p.status, p.body)
}

func ptr[T any](v T) *T { return &v }
