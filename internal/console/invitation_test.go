package console_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/client"
	"github.com/svcdev/svc/internal/config"
)

// invite invites email to the admin's workspace (or, with org, its
// organization) and returns the path of the invitation page.
func (b *testBundle) invite(t *testing.T, email, role string, org bool) string {
	t.Helper()
	api := b.h.Client(t, b.admin.APIKey)
	body := client.CreateInvitationRequest{Email: email, Role: role}
	var link string
	if org {
		resp, err := api.CreateOrganizationInvitationWithResponse(t.Context(), b.admin.OrganizationID, nil, body)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, resp.StatusCode(), string(resp.Body))
		link = resp.JSON201.InvitationUrl
	} else {
		resp, err := api.CreateWorkspaceInvitationWithResponse(t.Context(), b.admin.WorkspaceID, nil, body)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, resp.StatusCode(), string(resp.Body))
		link = resp.JSON201.InvitationUrl
	}
	require.True(t, strings.HasPrefix(link, "http://localhost:8080/invitations/accept?token="), link)
	path, _ := b.linkPath(t, link)
	return path
}

func TestAcceptInvitationNewAccount(t *testing.T) {
	t.Parallel()
	b := setup(t)
	path := b.invite(t, "new.person@example.com", "editor", false)
	br := b.browser(t)

	page := br.get(t, path)
	require.Equal(t, http.StatusOK, page.status, page.body)
	requirePageHeaders(t, page)
	for _, want := range []string{"Join Default workspace", "<dd>Default organization</dd>", "<dd>Default workspace</dd>", "<dd>editor</dd>", "<dd>new.person@example.com</dd>", "admin@example.com invited you", `name="password"`, `name="display_name"`} {
		require.Contains(t, page.body, want)
	}

	const pw = "my first password"
	mismatch := br.submit(t, path, "/invitations/accept", url.Values{"display_name": {"New Person"}, "password": {pw}, "password_confirmation": {pw + "x"}})
	require.Equal(t, http.StatusUnprocessableEntity, mismatch.status)
	require.Contains(t, mismatch.body, "The two passwords differ.")
	require.Contains(t, mismatch.body, `value="New Person"`, "the name is kept")
	require.NotContains(t, mismatch.body, pw, "the password is not")

	short := br.submit(t, path, "/invitations/accept", url.Values{"password": {"short"}, "password_confirmation": {"short"}})
	require.Equal(t, http.StatusUnprocessableEntity, short.status)
	require.Contains(t, short.body, "at least 8 characters")

	missing := br.submit(t, path, "/invitations/accept", url.Values{})
	require.Equal(t, http.StatusUnprocessableEntity, missing.status, "a new account needs a password")

	sent := br.submit(t, path, "/invitations/accept", url.Values{"display_name": {"New Person"}, "password": {pw}, "password_confirmation": {pw}})
	require.Equal(t, http.StatusOK, sent.status, sent.body)
	require.Contains(t, sent.body, "We have sent a mail to <strong>new.person@example.com</strong>")
	mails := b.confirmationMails(t, "new.person@example.com")
	require.Len(t, mails, 1)
	link, _ := b.linkPath(t, mails[0].Link)
	done := br.submit(t, link, "/invitations/confirm", url.Values{})
	require.Equal(t, http.StatusSeeOther, done.status, done.body)
	require.Equal(t, "/sign-in?notice=invitation_accepted", done.header.Get("Location"))
	require.Contains(t, br.get(t, "/sign-in?notice=invitation_accepted").body, "The invitation is accepted.")

	br.signIn(t, "new.person@example.com", pw)
	home := br.get(t, "/")
	require.Contains(t, home.body, "Signed in as new.person@example.com")
	require.Contains(t, home.body, "<p class=\"muted\">New Person</p>")
	require.Regexp(t, `<td><a href="/w/ws_[a-z0-9]+/runs">Default workspace</a></td>.*<span class="badge">editor</span>`, home.body)

	again := br.get(t, path)
	require.Equal(t, http.StatusGone, again.status)
	require.Contains(t, again.body, "This invitation was already accepted")
}

func TestAcceptInvitationExistingAccount(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.member(t, "viewer", "member password")
	b.exec(t, `DELETE FROM workspace_member WHERE principal_id = $1`, m.PrincipalID)
	path := b.invite(t, m.Email, "admin", true)
	br := b.browser(t)

	page := br.get(t, path)
	require.Equal(t, http.StatusOK, page.status, page.body)
	require.Contains(t, page.body, "Join Default organization")
	require.NotContains(t, page.body, "<dt>Workspace</dt>")
	require.Contains(t, page.body, "If you already have an svc account with this e-mail address, enter its password")

	// The link alone does not attach an account: its password is required.
	// Another password is told to check the mail, as a new address is.
	refused := br.submit(t, path, "/invitations/accept", url.Values{"password": {""}, "password_confirmation": {""}})
	require.Equal(t, http.StatusUnprocessableEntity, refused.status, refused.body)
	other := br.submit(t, path, "/invitations/accept", url.Values{"password": {"not the password"}, "password_confirmation": {"not the password"}})
	require.Equal(t, http.StatusOK, other.status, other.body)
	require.Contains(t, other.body, "Check your mail")
	done := br.submit(t, path, "/invitations/accept", url.Values{"password": {"member password"}, "password_confirmation": {"member password"}})
	require.Equal(t, http.StatusSeeOther, done.status, done.body)
	br.signIn(t, m.Email, "member password")
	require.Contains(t, br.get(t, "/").body, `<span>Default organization</span><span class="badge">admin</span>`)
}

func TestAcceptInvitationRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	for _, path := range []string{"/invitations/accept", "/invitations/accept?token=nope", "/invitations/accept?token=" + strings.Repeat("A", 43)} {
		p := br.get(t, path)
		require.Equal(t, http.StatusBadRequest, p.status, path)
		requirePageHeaders(t, p)
		require.Contains(t, p.body, "This invitation link is not valid", path)
	}
	forged := br.submit(t, "/sign-in", "/invitations/accept", url.Values{"token": {strings.Repeat("B", 43)}, "password": {"whatever password"}, "password_confirmation": {"whatever password"}})
	require.Equal(t, http.StatusBadRequest, forged.status)

	revoked := b.invite(t, "revoked@example.com", "viewer", false)
	b.exec(t, `UPDATE invitation SET revoked_at = now() WHERE lower(email) = 'revoked@example.com'`)
	p := br.get(t, revoked)
	require.Equal(t, http.StatusGone, p.status)
	require.Contains(t, p.body, "This invitation was withdrawn")

	expired := b.invite(t, "expired@example.com", "viewer", false)
	b.exec(t, `UPDATE invitation SET expires_at = now() - interval '1 second' WHERE lower(email) = 'expired@example.com'`)
	p = br.get(t, expired)
	require.Equal(t, http.StatusGone, p.status)
	require.Contains(t, p.body, "This invitation has expired")

	m := b.member(t, "viewer", "member password")
	b.exec(t, `DELETE FROM workspace_member WHERE principal_id = $1`, m.PrincipalID)
	disabled := b.invite(t, m.Email, "viewer", false)
	p = br.get(t, disabled)
	require.Equal(t, http.StatusOK, p.status)
	b.exec(t, `UPDATE user_account SET disabled_at = now() WHERE id = $1`, m.UserID)
	p = br.submit(t, disabled, "/invitations/accept", url.Values{"password": {"member password"}, "password_confirmation": {"member password"}})
	require.Equal(t, http.StatusForbidden, p.status)
	require.Contains(t, p.body, "This account is disabled")
}

// TestInvitationPageDoesNotTellAccounts: the inviter holds the invitation link
// too, so the page and the form's refusals are the same for an address that
// has an account and one that has none (apart from the token and the address).
func TestInvitationPageDoesNotTellAccounts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.member(t, "viewer", "member password")
	b.exec(t, `DELETE FROM workspace_member WHERE principal_id = $1`, m.PrincipalID)
	existing := b.invite(t, m.Email, "editor", false)
	fresh := b.invite(t, "nobody.yet@example.com", "editor", false)
	br := b.browser(t)

	// normalized removes what differs by design: the token and the address.
	// and the expiry, to the minute, of invitations made a moment apart.
	validUntil := regexp.MustCompile(`<dt>Valid until</dt><dd>[^<]*</dd>`)
	normalized := func(path, email, body string) string {
		token := strings.TrimPrefix(path, "/invitations/accept?token=")
		body = validUntil.ReplaceAllString(body, "<dt>Valid until</dt><dd>DATE</dd>")
		return strings.ReplaceAll(strings.ReplaceAll(body, token, "TOKEN"), email, "EMAIL")
	}
	pageOf := func(path, email string) page {
		p := br.get(t, path)
		require.Equal(t, http.StatusOK, p.status, p.body)
		p.body = normalized(path, email, p.body)
		return p
	}
	a, c := pageOf(existing, m.Email), pageOf(fresh, "nobody.yet@example.com")
	require.Equal(t, a.body, c.body, "the page does not tell whether the address has an account")

	for _, fields := range []url.Values{
		{},
		{"password": {"short"}, "password_confirmation": {"short"}},
		{"password": {"one password"}, "password_confirmation": {"another password"}},
	} {
		ra := br.submit(t, existing, "/invitations/accept", fields)
		rc := br.submit(t, fresh, "/invitations/accept", fields)
		require.Equal(t, http.StatusUnprocessableEntity, ra.status)
		require.Equal(t, ra.status, rc.status)
		require.Equal(t, normalized(existing, m.Email, ra.body), normalized(fresh, "nobody.yet@example.com", rc.body), "the refusal does not tell either")
	}
}

// TestAcceptFormIsRateLimited: a client that keeps guessing the password of
// the account an invitation is for is refused with 429 and Retry-After; the
// invitee from another client address still accepts with the right password.
func TestAcceptFormIsRateLimited(t *testing.T) {
	t.Parallel()
	b := setup(t, trustLoopback, func(c *config.Config) {
		c.Limits.InvitationAcceptPerInvitationPerClientPerMinute = 5
	})
	m := b.member(t, "viewer", "member password")
	b.exec(t, `DELETE FROM workspace_member WHERE principal_id = $1`, m.PrincipalID)
	path := b.invite(t, m.Email, "editor", false)

	attacker := b.browser(t)
	attacker.from = "198.51.100.66"
	wrong := url.Values{"password": {"guess password"}, "password_confirmation": {"guess password"}}
	for i := range 5 {
		p := attacker.submit(t, path, "/invitations/accept", wrong)
		require.Equal(t, http.StatusOK, p.status, "attempt %d", i+1)
		require.Contains(t, p.body, "Check your mail")
	}
	p := attacker.submit(t, path, "/invitations/accept", wrong)
	require.Equal(t, http.StatusTooManyRequests, p.status, p.body)
	requirePageHeaders(t, p)
	retry, err := strconv.Atoi(p.header.Get("Retry-After"))
	require.NoError(t, err)
	require.True(t, retry >= 1 && retry <= 60, "Retry-After %d", retry)
	require.Contains(t, p.body, "Too many attempts to accept this invitation.")
	right := url.Values{"password": {"member password"}, "password_confirmation": {"member password"}}
	require.Equal(t, http.StatusTooManyRequests, attacker.submit(t, path, "/invitations/accept", right).status, "the guessing client stays refused")

	invitee := b.browser(t)
	invitee.from = "203.0.113.10"
	done := invitee.submit(t, path, "/invitations/accept", right)
	require.Equal(t, http.StatusSeeOther, done.status, done.body)
}
