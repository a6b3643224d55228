package console_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/testfactory"
)

func TestModelsAreMadeOnAProviderWithTheirAPISettings(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	br.signIn(t, b.admin.Email, adminPassword)

	// Without a model provider, the empty list says to add one first.
	p := br.get(t, b.workspacePath("models"))
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "add one first")
	require.Contains(t, p.body, `href="`+b.workspacePath("providers", "model", "new")+`"`)

	prv := testfactory.Provider(t, b.h.App.Pool, b.admin.Owner(), &testfactory.ProviderOpts{Name: "vllm", Config: []byte(`{"base_url":"https://llm.example/v1"}`)})
	testfactory.Provider(t, b.h.App.Pool, b.admin.Owner(), &testfactory.ProviderOpts{Name: "off", Disabled: true})
	p = br.get(t, b.workspacePath("models"))
	require.Contains(t, p.body, `href="`+b.workspacePath("models", "new")+`"`)

	// The picker offers each enabled provider with each API of its type.
	p = br.get(t, b.workspacePath("models", "new"))
	require.Equal(t, http.StatusOK, p.status, p.body)
	pick := prv.ID + ":chat_completions"
	require.Contains(t, p.body, `<option value="`+pick+`">vllm (OpenAI-compatible server): chat_completions</option>`)
	require.NotContains(t, p.body, "off (")

	// The settings form is the API's settings schema.
	form := b.workspacePath("models", "new") + "?pick=" + url.QueryEscape(pick)
	p = br.get(t, form)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, `<input type="number" name="settings.temperature" value="" step="any" min="0" max="2">`)
	require.Contains(t, p.body, `<input type="number" name="settings.seed" value="" step="1"`)
	require.Contains(t, p.body, `<select name="settings.reasoning_effort">`)
	require.Contains(t, p.body, `<option value="minimal">minimal</option>`)
	require.Contains(t, p.body, `<select name="settings.parallel_tool_calls">`)
	require.Contains(t, p.body, `<textarea class="code" name="settings.stop"`)
	require.Contains(t, p.body, "Sampling temperature; lower is more deterministic.")

	// Refusals, from the form and from the schema, are shown beside their inputs.
	action := b.workspacePath("models")
	fields := url.Values{"pick": {pick}, "key": {"main"}, "model": {"gpt-5"}, "enabled": {"true"}, "settings.temperature": {"hot"}}
	p = br.submit(t, form, action, fields)
	require.Equal(t, http.StatusUnprocessableEntity, p.status, p.body)
	require.Regexp(t, `name="settings.temperature" value="hot"[^>]*>\s*<span class="field-error" role="alert">must be a number</span>`, p.body)
	fields.Set("settings.temperature", "5")
	p = br.submit(t, form, action, fields)
	require.Equal(t, http.StatusUnprocessableEntity, p.status, p.body)
	require.Contains(t, p.body, "must be at most 2")
	fields.Set("settings.temperature", "0.5")
	fields.Set("key", "Main Key")
	p = br.submit(t, form, action, fields)
	require.Equal(t, http.StatusUnprocessableEntity, p.status, p.body)
	require.Regexp(t, `name="key" value="Main Key"[^>]*>\s*<span class="field-error"`, p.body)

	fields.Set("key", "main")
	fields.Set("context_window", "lots")
	p = br.submit(t, form, action, fields)
	require.Equal(t, http.StatusUnprocessableEntity, p.status, p.body)
	require.Regexp(t, `name="context_window" value="lots"[^>]*>\s*<span class="field-error"`, p.body)
	fields.Set("context_window", "32000")
	fields.Set("settings.stop", `["END"]`)
	fields.Set("settings.parallel_tool_calls", "false")
	fields.Set("settings.reasoning_effort", "low")
	p = br.submit(t, form, action, fields)
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	page := b.workspacePath("models", "main")
	require.Equal(t, page, p.header.Get("Location"))
	m, err := b.h.App.Services.Models.Get(t.Context(), b.admin.Caller("admin"), "main")
	require.NoError(t, err)
	require.Equal(t, map[string]any{"temperature": 0.5, "stop": []any{"END"}, "parallel_tool_calls": false, "reasoning_effort": "low"}, m.Settings)
	require.True(t, m.Enabled)
	require.Equal(t, 32000, *m.ContextWindow)

	// The edit form holds the settings; saving changes what was changed
	// (a context window left blank is cleared).
	p = br.get(t, page)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "is created")
	require.Contains(t, p.body, `name="settings.temperature" value="0.5"`)
	require.Contains(t, p.body, `<option value="false" selected>No</option>`)
	require.Contains(t, p.body, `<option value="low" selected>low</option>`)
	require.Contains(t, p.body, `name="context_window" value="32000"`)
	p = br.submit(t, page, page, url.Values{"pick": {pick}, "model": {"gpt-5-mini"}, "settings.temperature": {"0.5"},
		"settings.stop": {`["END"]`}, "settings.parallel_tool_calls": {"false"}, "settings.reasoning_effort": {"low"}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	m, err = b.h.App.Services.Models.Get(t.Context(), b.admin.Caller("admin"), "main")
	require.NoError(t, err)
	require.Equal(t, "gpt-5-mini", m.Model)
	require.Nil(t, m.ContextWindow)
	require.EqualValues(t, 2, m.Version)
	require.Len(t, m.Settings, 4)

	// The list shows it with its provider.
	p = br.get(t, b.workspacePath("models"))
	require.Contains(t, p.body, `href="`+page+`">main</a>`)
	require.Contains(t, p.body, `>vllm</a>`)

	// Disable, with the shown ETag; a stale one changes nothing.
	p = br.submit(t, page, page+"/enabled", url.Values{"enabled": {"false"}, "etag": {`"main:1"`}})
	require.Equal(t, http.StatusPreconditionFailed, p.status, p.body)
	p = br.submit(t, page, page+"/enabled", url.Values{"enabled": {"false"}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	p = br.get(t, page)
	require.Contains(t, p.body, "is disabled")
	require.Contains(t, p.body, `<button type="submit">Enable</button>`)

	// A viewer reads, without actions, and cannot post.
	viewer, _ := b.signedInMember(t, "viewer")
	p = viewer.get(t, page)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.NotContains(t, p.body, `method="post" action="/w/`)
	p = viewer.get(t, b.workspacePath("models"))
	require.NotContains(t, p.body, "New model")
	require.Equal(t, http.StatusForbidden, viewer.get(t, b.workspacePath("models", "new")).status)
	csrf := hiddenFields(p.body)["csrf_token"]
	for _, path := range []string{page, page + "/enabled", action} {
		p = viewer.post(t, path, url.Values{"csrf_token": {csrf}, "enabled": {"true"}, "pick": {pick}, "key": {"x"}, "model": {"x"}})
		require.Equal(t, http.StatusForbidden, p.status, path)
	}
}
