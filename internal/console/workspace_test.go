package console_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/testfactory"
)

// signedInMember signs a new browser in as a new member of the bootstrap
// workspace with role.
func (b *testBundle) signedInMember(t *testing.T, role string) (*browser, testfactory.Member) {
	t.Helper()
	pw := "member password " + role
	m := b.member(t, role, pw)
	br := b.browser(t)
	br.signIn(t, m.Email, pw)
	return br, m
}

// workspacePath is the console URL of a page of the bootstrap workspace.
func (b *testBundle) workspacePath(parts ...string) string {
	p := "/w/" + b.admin.WorkspaceID
	if rest := strings.Join(parts, "/"); rest != "" {
		p += "/" + rest
	}
	return p
}

func TestWorkspacePagesNeedASessionAndComeBackAfterSignIn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	p := br.get(t, b.workspacePath("api-keys"))
	require.Equal(t, http.StatusSeeOther, p.status)
	loc := p.header.Get("Location")
	require.Equal(t, "/sign-in?next="+url.QueryEscape(b.workspacePath("api-keys")), loc)

	form := br.get(t, loc)
	require.Equal(t, http.StatusOK, form.status)
	hidden := hiddenFields(form.body)
	require.Equal(t, b.workspacePath("api-keys"), hidden["next"])
	p = br.post(t, "/sign-in", url.Values{"csrf_token": {hidden["csrf_token"]}, "next": {hidden["next"]},
		"email": {b.admin.Email}, "password": {adminPassword}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	require.Equal(t, b.workspacePath("api-keys"), p.header.Get("Location"))

	// Only workspace pages of this site are places to go on to.
	for _, next := range []string{"https://evil.example/w/x", "//evil.example/w/x", "/w/\\evil", "/api/v1/me"} {
		other := b.browser(t)
		f := other.get(t, "/sign-in?next="+url.QueryEscape(next))
		h := hiddenFields(f.body)
		require.Empty(t, h["next"], next)
		p := other.post(t, "/sign-in", url.Values{"csrf_token": {h["csrf_token"]}, "next": {next}, "email": {b.admin.Email}, "password": {adminPassword}})
		require.Equal(t, "/", p.header.Get("Location"), next)
	}
}

func TestWorkspaceNavigationAndSwitcher(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	br.signIn(t, b.admin.Email, adminPassword)
	p := br.get(t, "/w/"+b.admin.WorkspaceID)
	require.Equal(t, http.StatusSeeOther, p.status)
	require.Equal(t, b.workspacePath("runs"), p.header.Get("Location"))

	p = br.get(t, b.workspacePath("api-keys"))
	require.Equal(t, http.StatusOK, p.status, p.body)
	requirePageHeaders(t, p)
	labels := regexp.MustCompile(`<li><a href="/w/[^/]+/[a-z-]+"(?: aria-current="page")?>([^<]+)</a></li>`).FindAllStringSubmatch(p.body, -1)
	var got []string
	for _, l := range labels {
		got = append(got, l[1])
	}
	require.Equal(t, []string{"Runs", "Agents", "Skills", "Models", "Providers", "Connections", "Environments",
		"Memories", "Assets", "Webhooks", "Members", "API keys", "Audit log"}, got)
	require.Contains(t, p.body, `href="/w/`+b.admin.WorkspaceID+`/runs" aria-current="page" hx-boost="false">`, "the switcher lists the workspace")

	// A viewer's navigation leaves out what it may not open.
	viewer, _ := b.signedInMember(t, "viewer")
	p = viewer.get(t, b.workspacePath("api-keys"))
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.NotContains(t, p.body, ">Audit log<")

	// A workspace the person is no member of is not found, whether or not
	// it exists; the organization's owner reaches it as an admin.
	other := testfactory.Workspace(t, b.h.App.Pool, b.admin.OrganizationID, b.admin.PrincipalID, nil)
	p = br.get(t, "/w/"+other.ID+"/api-keys")
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, `<span class="badge">admin</span></summary>`)
	for _, ws := range []string{other.ID, "ws_nothing"} {
		p = viewer.get(t, "/w/"+ws+"/api-keys")
		require.Equal(t, http.StatusNotFound, p.status, ws)
	}
}

func TestMembersMakeUseAndRevokeTheirOwnAPIKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br, m := b.signedInMember(t, "runner")

	// The role list goes up to the person's own role.
	form := br.get(t, b.workspacePath("api-keys"))
	require.Equal(t, http.StatusOK, form.status, form.body)
	require.Contains(t, form.body, `<option value="runner" selected>runner</option>`)
	require.NotContains(t, form.body, `<option value="editor"`)

	// A role above the person's own is refused beside nothing lost.
	p := br.submit(t, b.workspacePath("api-keys"), b.workspacePath("api-keys"), url.Values{"name": {"too high"}, "role": {"admin"}})
	require.Equal(t, http.StatusForbidden, p.status, p.body)
	require.Contains(t, p.body, `value="too high"`)

	p = br.submit(t, b.workspacePath("api-keys"), b.workspacePath("api-keys"), url.Values{"name": {""}, "role": {"runner"}})
	require.Equal(t, http.StatusUnprocessableEntity, p.status, p.body)
	require.Regexp(t, `field-error[^>]*>[^<]+</span>`, p.body)

	p = br.submit(t, b.workspacePath("api-keys"), b.workspacePath("api-keys"), url.Values{"name": {"laptop"}, "role": {"viewer"}, "expires_on": {"2999-12-31"}})
	require.Equal(t, http.StatusOK, p.status, p.body)
	token := regexp.MustCompile(`<code id="new-token">(svc_[A-Za-z0-9]+)</code>`).FindStringSubmatch(p.body)
	require.NotNil(t, token, p.body)
	b.secret(token[1])

	// The token works with the API, as the person with the key's role.
	resp, err := b.h.Client(t, token[1]).GetMeWithResponse(t.Context())
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode())
	require.Equal(t, m.PrincipalID, resp.JSON200.Principal.Id)
	require.EqualValues(t, "viewer", resp.JSON200.Role)
	require.Equal(t, "2999-12-31T23:59:59Z", resp.JSON200.ApiKey.ExpiresAt.MustGet().UTC().Format("2006-01-02T15:04:05Z07:00"))

	// The list shows the key, never its token again.
	list := br.get(t, b.workspacePath("api-keys"))
	require.Contains(t, list.body, "laptop")
	require.NotContains(t, list.body, token[1])

	// A runner cannot see every key, nor revoke another's.
	require.Equal(t, http.StatusForbidden, br.get(t, b.workspacePath("api-keys", "all")).status)
	adminKey := b.otherKey(t)
	p = br.submit(t, b.workspacePath("api-keys"), b.workspacePath("api-keys", adminKey, "revoke"), url.Values{"etag": {`"` + adminKey + `:1"`}})
	require.Equal(t, http.StatusNotFound, p.status, p.body)

	// Revoking with a stale ETag overwrites nothing; with the shown one it revokes.
	var keyID string
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT id FROM api_key WHERE principal_id = $1 AND name = 'laptop'`, m.PrincipalID).Scan(&keyID))
	require.Contains(t, list.body, b.workspacePath("api-keys", keyID, "revoke"))
	p = br.submit(t, b.workspacePath("api-keys"), b.workspacePath("api-keys", keyID, "revoke"), url.Values{"etag": {`"` + keyID + `:9"`}})
	require.Equal(t, http.StatusPreconditionFailed, p.status, p.body)
	require.Contains(t, p.body, "changed since you opened it")
	p = br.post(t, b.workspacePath("api-keys", keyID, "revoke"), url.Values{"csrf_token": {hiddenFields(list.body)["csrf_token"]}, "etag": {`"` + keyID + `:1"`}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	after := br.get(t, p.header.Get("Location"))
	require.Contains(t, after.body, "is revoked")
	resp, err = b.h.Client(t, token[1]).GetMeWithResponse(t.Context())
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode())

	// A form without the page's CSRF token is refused.
	p = br.post(t, b.workspacePath("api-keys"), url.Values{"name": {"x"}, "role": {"viewer"}})
	require.Equal(t, http.StatusForbidden, p.status)
}

func TestAdminsSeeAndRevokeEveryKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, m := b.signedInMember(t, "editor")
	br := b.browser(t)
	br.signIn(t, b.admin.Email, adminPassword)
	all := br.get(t, b.workspacePath("api-keys", "all"))
	require.Equal(t, http.StatusOK, all.status, all.body)
	require.Contains(t, all.body, m.PrincipalID)
	re := regexp.MustCompile(`action="/w/[^/]+/api-keys/all/(` + m.KeyID + `)/revoke"[^>]*>\s*<input type="hidden" name="csrf_token" value="([^"]+)"><input type="hidden" name="etag" value="([^"]+)">`)
	f := re.FindStringSubmatch(all.body)
	require.NotNil(t, f, all.body)
	p := br.post(t, b.workspacePath("api-keys", "all", m.KeyID, "revoke"), url.Values{"csrf_token": {f[2]}, "etag": {strings.ReplaceAll(f[3], "&#34;", `"`)}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	resp, err := b.h.Client(t, m.Token).GetMeWithResponse(t.Context())
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode())
}

// otherKey returns the id of the bootstrap admin's key.
func (b *testBundle) otherKey(t *testing.T) string {
	t.Helper()
	var id string
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT id FROM api_key WHERE principal_id = $1`, b.admin.PrincipalID).Scan(&id))
	return id
}

func TestUnknownConsolePagesAreAPageNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	br.signIn(t, b.admin.Email, adminPassword)
	for _, path := range []string{b.workspacePath("nothing"), b.workspacePath("runs", "x", "y", "z")} {
		p := br.get(t, path)
		require.Equal(t, http.StatusNotFound, p.status, path)
		requirePageHeaders(t, p)
		require.Contains(t, p.body, "There is no console page at this address.")
	}
}
