package console_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/testfactory"
)

// rowForm returns the CSRF token and ETag of the form of a page that posts
// to action, or fails.
func rowForm(t *testing.T, body, action string) url.Values {
	t.Helper()
	re := regexp.MustCompile(`action="` + regexp.QuoteMeta(action) + `"[^>]*>\s*<input type="hidden" name="csrf_token" value="([^"]+)"><input type="hidden" name="etag" value="([^"]+)">`)
	m := re.FindStringSubmatch(body)
	require.NotNil(t, m, "no form posting to %s", action)
	return url.Values{"csrf_token": {m[1]}, "etag": {html.UnescapeString(m[2])}}
}

func TestAdminsChangeRolesAndRemoveMembers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	editor := testfactory.AddMember(t, b.h.App.Pool, b.admin.OrganizationID, b.admin.WorkspaceID, testfactory.MemberOpts{
		WorkspaceRole: "editor"})
	b.exec(t, `UPDATE principal SET display_name = '<b>Ed</b>' WHERE id = $1`, editor.PrincipalID)
	br := b.browser(t)
	br.signIn(t, b.admin.Email, adminPassword)

	list := br.get(t, b.workspacePath("members"))
	require.Equal(t, http.StatusOK, list.status, list.body)
	requirePageHeaders(t, list)
	require.Contains(t, list.body, "&lt;b&gt;Ed&lt;/b&gt;")
	require.NotContains(t, list.body, "<b>Ed")
	require.Contains(t, list.body, b.workspacePath("members", "invitations"))
	change := b.workspacePath("members", editor.PrincipalID)
	form := rowForm(t, list.body, change)

	// A role that is not one is refused.
	bad := url.Values{"csrf_token": form["csrf_token"], "etag": form["etag"], "role": {"owner"}}
	p := br.post(t, change, bad)
	require.Equal(t, http.StatusUnprocessableEntity, p.status, p.body)

	form.Set("role", "runner")
	p = br.post(t, change, form)
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	after := br.get(t, p.header.Get("Location"))
	require.Contains(t, after.body, "is runner of this workspace")
	resp, err := b.h.Client(t, editor.Token).GetMeWithResponse(t.Context())
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	require.EqualValues(t, "runner", resp.JSON200.Role, "the member's key acts with the new role")

	// The ETag the first page showed is stale now: nothing is overwritten.
	form.Set("role", "admin")
	p = br.post(t, change, form)
	require.Equal(t, http.StatusPreconditionFailed, p.status, p.body)
	require.Contains(t, p.body, "changed since you opened it")
	p = br.post(t, b.workspacePath("members", editor.PrincipalID, "remove"), url.Values{"csrf_token": form["csrf_token"], "etag": form["etag"]})
	require.Equal(t, http.StatusPreconditionFailed, p.status, p.body)

	// The organization's owner keeps the admin role here.
	self := rowForm(t, after.body, b.workspacePath("members", b.admin.PrincipalID))
	self.Set("role", "viewer")
	p = br.post(t, b.workspacePath("members", b.admin.PrincipalID), self)
	require.Equal(t, http.StatusConflict, p.status, p.body)
	require.Contains(t, p.body, "owner or admin of the organization")

	remove := rowForm(t, after.body, b.workspacePath("members", editor.PrincipalID, "remove"))
	p = br.post(t, b.workspacePath("members", editor.PrincipalID, "remove"), remove)
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	gone := br.get(t, p.header.Get("Location"))
	require.Contains(t, gone.body, "The member is removed")
	require.NotContains(t, gone.body, editor.Email)
	resp, err = b.h.Client(t, editor.Token).GetMeWithResponse(t.Context())
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode())
}

func TestViewersSeeMembersReadOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	viewer, m := b.signedInMember(t, "viewer")
	list := viewer.get(t, b.workspacePath("members"))
	require.Equal(t, http.StatusOK, list.status, list.body)
	require.Contains(t, list.body, b.admin.Email)
	require.Contains(t, list.body, "(you)")
	require.NotContains(t, list.body, "Change role")
	require.NotContains(t, list.body, ">Remove<")
	require.NotContains(t, list.body, b.workspacePath("members", "invitations"))
	csrf := hiddenFields(list.body)["csrf_token"]
	for _, path := range []string{b.workspacePath("members", m.PrincipalID), b.workspacePath("members", b.admin.PrincipalID, "remove"),
		b.workspacePath("members", "invitations")} {
		p := viewer.post(t, path, url.Values{"csrf_token": {csrf}, "role": {"admin"}, "etag": {m.PrincipalID + ":1"}, "email": {"x@example.com"}})
		require.Equal(t, http.StatusForbidden, p.status, path)
	}
	require.Equal(t, http.StatusForbidden, viewer.get(t, b.workspacePath("members", "invitations")).status)
}

func TestAdminsInviteAndRevoke(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	br.signIn(t, b.admin.Email, adminPassword)
	invitations := b.workspacePath("members", "invitations")

	empty := br.get(t, invitations)
	require.Equal(t, http.StatusOK, empty.status, empty.body)
	require.Contains(t, empty.body, "No invitations yet")

	p := br.submit(t, invitations, invitations, url.Values{"email": {"not an address"}, "role": {"editor"}})
	require.Equal(t, http.StatusUnprocessableEntity, p.status, p.body)
	require.Contains(t, p.body, `value="not an address"`)
	require.Regexp(t, `field-error[^>]*>[^<]+</span>`, p.body)
	require.Contains(t, p.body, `<option value="editor" selected>`)

	p = br.submit(t, invitations, invitations, url.Values{"email": {"ada@example.com"}, "role": {"editor"}})
	require.Equal(t, http.StatusOK, p.status, p.body)
	link := regexp.MustCompile(`<code id="new-link">([^<]+)</code>`).FindStringSubmatch(p.body)
	require.NotNil(t, link, p.body)
	b.secret(html.UnescapeString(link[1]))
	require.Contains(t, link[1], "/invitations/accept")
	require.Contains(t, p.body, "is on its way")

	// The link is shown once; the list shows the pending invitation.
	list := br.get(t, invitations)
	require.NotContains(t, list.body, "new-link")
	require.NotContains(t, list.body, link[1])
	require.Contains(t, list.body, "ada@example.com")
	require.Contains(t, list.body, `<span class="status status-pending">pending</span>`)

	// The same address cannot be invited twice while pending.
	p = br.submit(t, invitations, invitations, url.Values{"email": {"ada@example.com"}, "role": {"viewer"}})
	require.Equal(t, http.StatusConflict, p.status, p.body)

	var invID string
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT id FROM invitation WHERE email = 'ada@example.com'`).Scan(&invID))
	revoke := b.workspacePath("members", "invitations", invID, "revoke")
	form := rowForm(t, list.body, revoke)
	stale := url.Values{"csrf_token": form["csrf_token"], "etag": {`"` + invID + `:7"`}}
	p = br.post(t, revoke, stale)
	require.Equal(t, http.StatusPreconditionFailed, p.status, p.body)
	p = br.post(t, revoke, form)
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	after := br.get(t, p.header.Get("Location"))
	require.Contains(t, after.body, "is revoked")
	require.Contains(t, after.body, `<span class="status status-revoked">revoked</span>`)
	require.NotContains(t, after.body, revoke, "a revoked invitation has nothing to revoke")
}
