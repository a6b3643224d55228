package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAdminsBrowseAndFilterTheAuditLog(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	br.signIn(t, b.admin.Email, adminPassword)

	// Two changes: a key made by the admin, and a member's role changed.
	_, m := b.signedInMember(t, "editor")
	list := br.get(t, b.workspacePath("members"))
	form := rowForm(t, list.body, b.workspacePath("members", m.PrincipalID))
	form.Set("role", "runner")
	require.Equal(t, http.StatusSeeOther, br.post(t, b.workspacePath("members", m.PrincipalID), form).status)
	b.exec(t, `UPDATE audit_event SET created_at = '2001-01-01T00:00:00Z' WHERE action = 'member.role_changed'`)

	all := br.get(t, b.workspacePath("audit"))
	require.Equal(t, http.StatusOK, all.status, all.body)
	requirePageHeaders(t, all)
	require.Contains(t, all.body, "<code>member.role_changed</code>")
	require.Contains(t, all.body, b.workspacePath("audit")+"?actor_id="+b.admin.PrincipalID)

	byAction := br.get(t, b.workspacePath("audit")+"?action=member.role_changed")
	require.Equal(t, http.StatusOK, byAction.status, byAction.body)
	require.Equal(t, 1, strings.Count(byAction.body, "<tr>")-1, "one event and the head row")
	require.Contains(t, byAction.body, `value="member.role_changed"`)
	require.Contains(t, byAction.body, ">Clear</a>")

	bySubject := br.get(t, b.workspacePath("audit")+"?subject_id="+m.PrincipalID+"&actor_id="+b.admin.PrincipalID)
	require.Contains(t, bySubject.body, "<code>member.role_changed</code>")
	old := br.get(t, b.workspacePath("audit")+"?until=2002-01-01T00:00")
	require.Contains(t, old.body, "<code>member.role_changed</code>")
	require.Equal(t, 1, strings.Count(old.body, "<tr>")-1)
	recent := br.get(t, b.workspacePath("audit")+"?since=2002-01-01T00:00")
	require.NotContains(t, recent.body, "<code>member.role_changed</code>")

	none := br.get(t, b.workspacePath("audit")+"?action="+url.QueryEscape("<i>nothing</i>"))
	require.Equal(t, http.StatusOK, none.status)
	require.Contains(t, none.body, "No events match these filters.")
	require.Contains(t, none.body, `value="&lt;i&gt;nothing&lt;/i&gt;"`)

	bad := br.get(t, b.workspacePath("audit")+"?since=yesterday")
	require.Equal(t, http.StatusOK, bad.status)
	require.Regexp(t, `field-error[^>]*>must be a date and time`, bad.body)
	require.Contains(t, bad.body, `value="yesterday"`)
	backwards := br.get(t, b.workspacePath("audit")+"?since=2002-01-01T00:00&until=2001-01-01T00:00")
	require.Regexp(t, `field-error[^>]*>must be after since`, backwards.body)
}

func TestTheAuditLogIsForAdminsOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, role := range []string{"viewer", "editor"} {
		br, _ := b.signedInMember(t, role)
		require.Equal(t, http.StatusForbidden, br.get(t, b.workspacePath("audit")).status, role)
	}
}
