package console_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/provider/probe/vendortest"
	"github.com/svcdev/svc/internal/testfactory"
)

// allowLocal lets the process call the given local servers, as an operator
// allows a vendor on its own network.
func allowLocal(t *testing.T, servers ...string) func(*config.Config) {
	return func(cfg *config.Config) {
		cfg.EndpointPolicy.AllowHTTP = true
		cfg.EndpointPolicy.AllowedPrefixes = []string{"127.0.0.0/8"}
		for _, s := range servers {
			u, err := url.Parse(s)
			require.NoError(t, err)
			port, err := strconv.Atoi(u.Port())
			require.NoError(t, err)
			cfg.EndpointPolicy.AllowedPorts = append(cfg.EndpointPolicy.AllowedPorts, port)
		}
	}
}

// standIn starts the local stand-in of a vendor type accepting key.
func standIn(t *testing.T, typ, key string) *vendortest.Server {
	t.Helper()
	for _, v := range vendortest.Vendors() {
		if v.Type == typ {
			return vendortest.Start(t, v, key)
		}
	}
	t.Fatalf("no stand-in for %s", typ)
	return nil
}

var providerLinkRE = regexp.MustCompile(`/providers/model/(prv_[0-9A-Za-z]+)$`)

func TestProviderFormFromTheTypeSchemaCreatesTestsEditsAndDisables(t *testing.T) {
	t.Parallel()
	const key = "sk-console-0123456789abcdef"
	srv := standIn(t, "openai_compatible", key)
	b := setup(t, allowLocal(t, srv.URL))
	b.secret(key)
	br := b.browser(t)
	br.signIn(t, b.admin.Email, adminPassword)

	// The empty list says what to do next.
	p := br.get(t, b.workspacePath("providers"))
	require.Equal(t, http.StatusOK, p.status, p.body)
	requirePageHeaders(t, p)
	require.Contains(t, p.body, "No model providers yet")
	require.Contains(t, p.body, `href="`+b.workspacePath("providers", "model", "new")+`"`)
	require.Contains(t, p.body, `href="`+b.workspacePath("providers", "web")+`"`, "a tab per kind")

	// First the type, then the form its schemas describe.
	p = br.get(t, b.workspacePath("providers", "model", "new"))
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, `<option value="openai_compatible"`)
	formPath := b.workspacePath("providers", "model", "new") + "?type=openai_compatible"
	p = br.get(t, formPath)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, `<input type="url" name="config.base_url"`)
	require.Contains(t, p.body, `<input type="password" name="credential.api_key" autocomplete="new-password"`)
	require.Contains(t, p.body, "Base URL that serves /chat/completions and /models")
	require.Regexp(t, `base_url <span class="badge">required</span>`, p.body)

	// A refusal is shown beside its input; what was typed is kept, except the secret.
	action := b.workspacePath("providers", "model")
	p = br.submit(t, formPath, action, url.Values{"name": {"local vllm"}, "credential.api_key": {key}})
	require.Equal(t, http.StatusUnprocessableEntity, p.status, p.body)
	require.Regexp(t, `name="config.base_url"[^>]*>\s*<span class="field-error" role="alert">is required</span>`, p.body)
	require.Contains(t, p.body, `value="local vllm"`)
	require.NotContains(t, p.body, key)

	p = br.submit(t, formPath, action, url.Values{"name": {"local vllm"}, "config.base_url": {srv.BaseURL()}, "credential.api_key": {key}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	m := providerLinkRE.FindStringSubmatch(p.header.Get("Location"))
	require.NotNil(t, m, p.header.Get("Location"))
	id := m[1]
	page := b.workspacePath("providers", "model", id)
	p = br.get(t, page)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "is created")
	require.Contains(t, p.body, "stored (never shown)")
	require.Contains(t, p.body, `value="`+srv.BaseURL()+`"`, "the edit form holds the config")
	require.Contains(t, p.body, "Leave blank to keep it")
	require.NotContains(t, p.body, key, "a credential is never shown back")

	// The list shows it.
	list := br.get(t, b.workspacePath("providers", "model"))
	require.Contains(t, list.body, `href="`+page+`">local vllm</a>`)

	// The test button reaches the vendor with the stored credential.
	p = br.submit(t, page, page+"/test", nil)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, `<span class="status status-succeeded">succeeded</span>`)
	require.Regexp(t, `Took \d+ ms`, p.body)

	// Saving with the secret left blank keeps it.
	p = br.submit(t, page, page, url.Values{"name": {"vllm"}, "config.base_url": {srv.BaseURL()}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	secrets, err := b.h.App.Services.Providers.OpenSecrets(t.Context(), b.admin.Caller("admin"), catalog.KindModel, id)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"api_key": key}, secrets.Credential)
	p = br.get(t, page)
	require.Contains(t, p.body, "<h1>vllm</h1>")
	require.Contains(t, p.body, "<dt>Version</dt><dd>2</dd>")

	// A new address with the secret left blank must carry the credential again.
	p = br.submit(t, page, page, url.Values{"name": {"vllm"}, "config.base_url": {srv.URL + "/other"}})
	require.Equal(t, http.StatusUnprocessableEntity, p.status, p.body)
	require.Regexp(t, `<legend>Credential</legend>\s*<span class="field-error" role="alert">must be resent`, p.body)
	require.Contains(t, p.body, `value="`+srv.URL+`/other"`)

	// A stale ETag overwrites nothing.
	fresh := br.get(t, page)
	h := hiddenFields(fresh.body)
	p = br.post(t, page, url.Values{"csrf_token": {h["csrf_token"]}, "etag": {`"` + id + `:1"`}, "name": {"stale"}, "config.base_url": {srv.BaseURL()}})
	require.Equal(t, http.StatusPreconditionFailed, p.status, p.body)
	require.Contains(t, p.body, "changed since you opened it")

	// Disable: the test is refused and the button goes.
	p = br.submit(t, page, page+"/enabled", url.Values{"enabled": {"false"}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	p = br.get(t, page)
	require.Contains(t, p.body, "is disabled")
	require.Contains(t, p.body, `<span class="status status-disabled">disabled</span>`)
	require.NotContains(t, p.body, `action="`+page+`/test"`)
	p = br.post(t, page+"/test", url.Values{"csrf_token": {hiddenFields(p.body)["csrf_token"]}})
	require.Equal(t, http.StatusConflict, p.status, p.body)
	require.Contains(t, p.body, "The provider is disabled")
	p = br.submit(t, page, page+"/enabled", url.Values{"enabled": {"true"}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	require.Empty(t, srv.Problems())
}

func TestProviderPagesAreReadOnlyForViewers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	prv := testfactory.Provider(t, b.h.App.Pool, b.admin.Owner(), &testfactory.ProviderOpts{
		Name: `<b>shop</b>`, Config: []byte(`{"base_url":"https://llm.example/v1"}`),
	})
	page := b.workspacePath("providers", "model", prv.ID)

	viewer, _ := b.signedInMember(t, "viewer")
	p := viewer.get(t, page)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "&lt;b&gt;shop&lt;/b&gt;")
	require.NotContains(t, p.body, "<b>shop</b>")
	require.NotContains(t, p.body, `method="post" action="/w/`, "no action for a viewer")
	p = viewer.get(t, b.workspacePath("providers"))
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.NotContains(t, p.body, "New model provider")
	require.Equal(t, http.StatusForbidden, viewer.get(t, b.workspacePath("providers", "model", "new")).status)
	csrf := hiddenFields(p.body)["csrf_token"]
	for _, path := range []string{page, page + "/enabled", page + "/test", b.workspacePath("providers", "model")} {
		p = viewer.post(t, path, url.Values{"csrf_token": {csrf}, "name": {"x"}, "enabled": {"false"}})
		require.Equal(t, http.StatusForbidden, p.status, path)
	}

	// A runner may test but not change.
	runner, _ := b.signedInMember(t, "runner")
	p = runner.get(t, page)
	require.Contains(t, p.body, `action="`+page+`/test"`)
	require.NotContains(t, p.body, `action="`+page+`/enabled"`)
	require.NotContains(t, p.body, `action="`+page+`"`)

	// Every kind has its page; the environment types' forms come from their schemas.
	br := b.browser(t)
	br.signIn(t, b.admin.Email, adminPassword)
	for _, k := range []string{"web", "environment", "connector", "memory"} {
		p = br.get(t, b.workspacePath("providers", k))
		require.Equal(t, http.StatusOK, p.status, k)
		require.Contains(t, p.body, `aria-current="page">`, k)
	}
	p = br.get(t, b.workspacePath("providers", "environment", "new")+"?type=docker")
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, `<textarea class="code" name="credential.tls_key"`, "a PEM secret spans lines")
	require.Contains(t, p.body, `placeholder="unix:///var/run/docker.sock"`)
	p = br.get(t, b.workspacePath("providers", "environment", "new")+"?type=openai")
	require.Equal(t, http.StatusNotFound, p.status, "a type of another kind")
	require.Contains(t, p.body, "is a model provider type, not a environment provider type")
}
