package console_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/connection/composiotest"
	"github.com/svcdev/svc/internal/provider"
	"github.com/svcdev/svc/internal/provider/catalog"
)

func TestConnectionsAreMadeAndAuthorizedAtTheVendor(t *testing.T) {
	t.Parallel()
	const key = "composio-project-key-0123456789"
	srv := composiotest.Start(t, key)
	b := setup(t, allowLocal(t, srv.URL))
	b.secret(key)
	br := b.browser(t)
	br.signIn(t, b.admin.Email, adminPassword)

	// Without a connector provider, the empty list says to add one.
	p := br.get(t, b.workspacePath("connections"))
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, `href="`+b.workspacePath("providers", "connector", "new")+`"`)

	prv, err := b.h.App.Services.Providers.Create(t.Context(), b.admin.Caller("admin"), catalog.KindConnector, provider.CreateInput{
		Type: "composio", Name: "Composio", Config: map[string]any{"base_url": srv.URL}, Credential: map[string]any{"api_key": key}})
	require.NoError(t, err)

	form := b.workspacePath("connections", "new") + "?provider=" + prv.ID
	p = br.get(t, form)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, `<input type="text" name="config.auth_config_id"`)
	require.Contains(t, p.body, `<input type="url" name="config.callback_url"`)
	require.Contains(t, p.body, `<input type="password" name="credential.connected_account_id"`)

	action := b.workspacePath("connections")
	fields := url.Values{"provider_id": {prv.ID}, "name": {"gh <team>"}, "app": {"GitHub"}, "config.auth_config_id": {"ac_oauth"}, "enabled": {"true"}}
	p = br.submit(t, form, action, fields)
	require.Equal(t, http.StatusUnprocessableEntity, p.status, p.body)
	require.Regexp(t, `name="app" value="GitHub"[^>]*>\s*<span class="field-error"`, p.body)
	fields.Set("app", "github")
	p = br.submit(t, form, action, fields)
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	page := p.header.Get("Location")
	cid := regexp.MustCompile(`con_[0-9a-z]+$`).FindString(page)
	require.NotEmpty(t, cid, page)

	p = br.get(t, page)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "Authorize it to connect the account")
	require.Contains(t, p.body, "<h1>gh &lt;team&gt;</h1>")
	require.Contains(t, p.body, "not connected")
	list := br.get(t, b.workspacePath("connections"))
	require.Contains(t, list.body, `href="`+page+`">gh &lt;team&gt;</a>`)

	// Authorizing leads to the operation's page, which links to the vendor's
	// consent page and refreshes until the authorization settles.
	p = br.submit(t, page, page+"/authorizations", nil)
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	opPage := p.header.Get("Location")
	require.Regexp(t, `^`+regexp.QuoteMeta(page)+`/operations/cop_[0-9a-z]+$`, opPage)
	p = br.get(t, opPage)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, `<span class="status status-pending">pending</span>`)
	require.Contains(t, p.body, `hx-trigger="every 2s"`)
	require.Contains(t, p.body, `href="`+opPage+`">Refresh</a>`)
	var account composiotest.Account
	for _, a := range srv.Accounts() {
		if a.UserID == cid {
			account = a
		}
	}
	require.NotEmpty(t, account.ID)
	require.Contains(t, html.UnescapeString(p.body), `href="`+account.RedirectURL+`"`)
	require.True(t, strings.HasPrefix(account.RedirectURL, composiotest.RedirectBase))

	srv.Complete(account.ID)
	require.NoError(t, b.h.App.Connections.Drive(t.Context()))
	p = br.get(t, opPage)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, `<span class="status status-succeeded">succeeded</span>`)
	require.Contains(t, p.body, "The account is connected")
	require.NotContains(t, p.body, "hx-trigger", "a settled authorization stops refreshing")
	p = br.get(t, page)
	require.Contains(t, p.body, `<span class="status status-active">connected</span> (never shown)`)
	require.NotContains(t, p.body, account.ID, "the credential is never shown")
	require.Contains(t, p.body, "Leave blank to keep it")

	// Saving with the credential left blank keeps it.
	p = br.submit(t, page, page, url.Values{"name": {"gh"}, "config.auth_config_id": {"ac_oauth"}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	conn, err := b.h.App.Services.Connections.Get(t.Context(), b.admin.Caller("admin"), cid)
	require.NoError(t, err)
	require.Equal(t, "gh", conn.Name)
	require.True(t, conn.CredentialConfigured)

	// A viewer sees the connection without actions, and may not authorize
	// or read an authorization (its link connects an account).
	viewer, _ := b.signedInMember(t, "viewer")
	p = viewer.get(t, page)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.NotContains(t, p.body, `method="post" action="/w/`)
	require.Equal(t, http.StatusForbidden, viewer.get(t, opPage).status)
	csrf := hiddenFields(p.body)["csrf_token"]
	for _, path := range []string{page + "/authorizations", page + "/revoke", page, action} {
		p = viewer.post(t, path, url.Values{"csrf_token": {csrf}, "etag": {conn.ETag()}, "name": {"x"}})
		require.Equal(t, http.StatusForbidden, p.status, path)
	}

	// Revoke removes the credential, with the shown ETag.
	p = br.submit(t, page, page+"/revoke", url.Values{"etag": {`"` + cid + `:1"`}})
	require.Equal(t, http.StatusPreconditionFailed, p.status, p.body)
	p = br.submit(t, page, page+"/revoke", nil)
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	p = br.get(t, page)
	require.Contains(t, p.body, "is revoked")
	require.Contains(t, p.body, "not connected")
	require.NotContains(t, p.body, `action="`+page+`/revoke"`)
	require.Empty(t, srv.Problems())
}
