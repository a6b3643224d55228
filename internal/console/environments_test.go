package console_test

import (
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/testfactory"
)

func localEnvironments(c *config.Config) { c.Environments.LocalEnabled = true }

func TestEnvironmentTemplatesAreMadeFromTheTypeEnvironmentSchema(t *testing.T) {
	t.Parallel()
	b := setup(t, localEnvironments)
	br := b.browser(t)
	br.signIn(t, b.admin.Email, adminPassword)

	// Without an environment provider, the empty list says to add one.
	p := br.get(t, b.workspacePath("environments", "templates"))
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, `href="`+b.workspacePath("providers", "environment", "new")+`"`)

	prv := testfactory.Provider(t, b.h.App.Pool, b.admin.Owner(), &testfactory.ProviderOpts{Kind: "environment", Name: "laptop"})
	p = br.get(t, b.workspacePath("environments", "templates", "new"))
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, `<option value="`+prv.ID+`">laptop (local)</option>`)

	form := b.workspacePath("environments", "templates", "new") + "?provider=" + prv.ID
	p = br.get(t, form)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, `<input type="text" name="config.workdir"`)
	require.Contains(t, p.body, `<input type="number" name="config.timeout_seconds" value="" step="1" min="1" max="86400" placeholder="3600">`)

	action := b.workspacePath("environments", "templates")
	fields := url.Values{"environment_provider_id": {prv.ID}, "name": {"dev"}, "enabled": {"true"}, "config.timeout_seconds": {"100000"},
		"labels": {"team: ops"}}
	p = br.submit(t, form, action, fields)
	require.Equal(t, http.StatusUnprocessableEntity, p.status, p.body)
	require.Regexp(t, `name="config.timeout_seconds" value="100000"[^>]*>\s*<span class="field-error" role="alert">must be at most 86400</span>`, p.body)
	fields.Set("config.timeout_seconds", "1800")
	fields.Set("idle_stop_seconds", "600")
	p = br.submit(t, form, action, fields)
	require.Equal(t, http.StatusUnprocessableEntity, p.status, p.body)
	require.Regexp(t, `name="idle_stop_seconds" value="600"[^>]*>\s*<span class="field-error" role="alert">the local provider type cannot stop environments`, p.body)
	require.Contains(t, p.body, `value="dev"`)

	fields.Del("idle_stop_seconds") // local environments are neither stopped nor deleted
	fields.Set("config.workdir", "/tmp/dev")
	p = br.submit(t, form, action, fields)
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	page := p.header.Get("Location")
	require.Regexp(t, `/environments/templates/[a-z]+_[0-9a-z]+$`, page)
	tid := regexp.MustCompile(`[^/]+$`).FindString(page)
	tpl, err := b.h.App.Services.Templates.Get(t.Context(), b.admin.Caller("admin"), tid)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"workdir": "/tmp/dev", "timeout_seconds": 1800.0}, tpl.Config)
	require.Equal(t, map[string]string{"team": "ops"}, tpl.Labels)

	p = br.get(t, page)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "is created")
	require.Contains(t, p.body, `name="config.workdir" value="/tmp/dev"`)
	require.Contains(t, p.body, "team: ops\n</textarea>")

	// Editing keeps what is not changed; blank thresholds mean never.
	p = br.submit(t, page, page, url.Values{"name": {"dev"}, "description": {"for <tests>"}, "config.workdir": {"/tmp/dev"},
		"config.timeout_seconds": {"1800"}, "labels": {"team: ops"}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	tpl, err = b.h.App.Services.Templates.Get(t.Context(), b.admin.Caller("admin"), tid)
	require.NoError(t, err)
	require.Equal(t, "for <tests>", tpl.Description)
	require.Nil(t, tpl.IdleStopSeconds)
	p = br.get(t, page)
	require.Contains(t, p.body, "for &lt;tests&gt;")

	// Disable.
	p = br.submit(t, page, page+"/enabled", url.Values{"enabled": {"false"}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	p = br.get(t, b.workspacePath("environments", "templates"))
	require.Contains(t, p.body, `href="`+page+`">dev</a>`)
	require.Contains(t, p.body, `<span class="status status-disabled">disabled</span>`)
}

func TestEnvironmentsAreListedAndDeleted(t *testing.T) {
	t.Parallel()
	b := setup(t, localEnvironments)
	br := b.browser(t)
	br.signIn(t, b.admin.Email, adminPassword)

	p := br.get(t, b.workspacePath("environments"))
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "No environments yet")

	tpl := testfactory.EnvironmentTemplate(t, b.h.App.Pool, b.admin.Owner(), &testfactory.EnvironmentTemplateOpts{
		Name: "sandbox", Provider: &testfactory.ProviderOpts{Kind: "environment"}})
	env := testfactory.Environment(t, b.h.App.Pool, b.admin.Owner(), &testfactory.EnvironmentOpts{TemplateID: tpl.ID})
	p = br.get(t, b.workspacePath("environments"))
	require.Contains(t, p.body, `href="`+b.workspacePath("environments", env.ID)+`"`)
	require.Contains(t, p.body, `>sandbox</a>`)
	require.Contains(t, p.body, `<span class="status status-running">running</span>`)
	p = br.get(t, b.workspacePath("environments")+"?template="+tpl.ID)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, env.ID)

	// A viewer sees it without the delete button and cannot delete.
	page := b.workspacePath("environments", env.ID)
	viewer, _ := b.signedInMember(t, "viewer")
	p = viewer.get(t, page)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.NotContains(t, p.body, `method="post" action="/w/`)
	p = viewer.post(t, page+"/delete", url.Values{"csrf_token": {hiddenFields(p.body)["csrf_token"]}, "etag": {`"` + env.ID + `:1"`}})
	require.Equal(t, http.StatusForbidden, p.status)
	p = viewer.get(t, b.workspacePath("environments", "templates", tpl.ID))
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.NotContains(t, p.body, `method="post" action="/w/`)
	require.Equal(t, http.StatusForbidden, viewer.get(t, b.workspacePath("environments", "templates", "new")).status)

	// Delete with a stale ETag refuses; with the shown one the environment is being deleted.
	p = br.submit(t, page, page+"/delete", url.Values{"etag": {`"` + env.ID + `:9"`}})
	require.Equal(t, http.StatusPreconditionFailed, p.status, p.body)
	p = br.submit(t, page, page+"/delete", nil)
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	p = br.get(t, page)
	require.Contains(t, p.body, "is being deleted")
	require.Contains(t, p.body, `<span class="status status-deleting">deleting</span>`)
	require.NotContains(t, p.body, `action="`+page+`/delete"`)
}
