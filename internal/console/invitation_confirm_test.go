package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/invitation"
	"github.com/svcdev/svc/internal/testfactory"
)

// confirmationMails returns the queued confirmation and attempt mails to
// email, oldest first.
func (b *testBundle) confirmationMails(t *testing.T, email string) []testfactory.ConfirmationMail {
	t.Helper()
	return testfactory.ConfirmationMails(t, b.h.App.Pool, b.h.App.Keyring, email)
}

func (b *testBundle) accountCount(t *testing.T, email string) int {
	t.Helper()
	var n int
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT count(*) FROM user_account WHERE lower(email) = lower($1)`, email).Scan(&n))
	return n
}

// TestAcceptFormDoesNotTellOrCreateAccounts reproduces the attack of the
// token's holder (the inviter has the invitation URL): a password submitted
// for an address with an account and for one without gets the same page, no
// account is created for the new address until the link mailed to it is
// followed, and the existing account is not changed.
func TestAcceptFormDoesNotTellOrCreateAccounts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.member(t, "viewer", "member password")
	b.exec(t, `DELETE FROM workspace_member WHERE principal_id = $1`, m.PrincipalID)
	const freshEmail = "nobody.yet@example.com"
	existing := b.invite(t, m.Email, "editor", false)
	fresh := b.invite(t, freshEmail, "editor", false)
	prober := b.browser(t)

	normalized := func(path, email, body string) string {
		token := strings.TrimPrefix(path, "/invitations/accept?token=")
		return strings.ReplaceAll(strings.ReplaceAll(body, token, "TOKEN"), email, "EMAIL")
	}
	const guess = "a random guess 123"
	b.secret(guess)
	fields := url.Values{"display_name": {"Prober"}, "password": {guess}, "password_confirmation": {guess}}
	ra := prober.submit(t, existing, "/invitations/accept", fields)
	rc := prober.submit(t, fresh, "/invitations/accept", fields)
	require.Equal(t, http.StatusOK, ra.status, ra.body)
	require.Equal(t, ra.status, rc.status)
	require.Contains(t, rc.body, "Check your mail")
	require.Contains(t, rc.body, freshEmail)
	require.Equal(t, normalized(existing, m.Email, ra.body), normalized(fresh, freshEmail, rc.body),
		"the answer does not tell whether the address has an account")

	require.Zero(t, b.accountCount(t, freshEmail), "the token alone creates no account")
	var acceptedAt *string
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT accepted_at::text FROM invitation WHERE email = $1`, freshEmail).Scan(&acceptedAt))
	require.Nil(t, acceptedAt, "the invitation is not accepted yet")

	// The existing account was told, with no link that creates anything.
	told := b.confirmationMails(t, m.Email)
	require.Len(t, told, 1)
	require.Equal(t, invitation.AttemptMailTemplate, told[0].Payload.Template)
	require.True(t, strings.HasPrefix(told[0].Link, "http://localhost:8080/invitations/accept?token="), told[0].Link)
	prober.signIn(t, m.Email, "member password") // the password is unchanged

	// The new address got the confirmation link; a second submission replaces it.
	mails := b.confirmationMails(t, freshEmail)
	require.Len(t, mails, 1)
	require.Equal(t, invitation.ConfirmationMailTemplate, mails[0].Payload.Template)
	first, _ := b.linkPath(t, mails[0].Link)
	require.True(t, strings.HasPrefix(first, "/invitations/confirm?token="), first)

	const chosen = "the invitee's own password"
	b.secret(chosen)
	invitee := b.browser(t)
	sent := invitee.submit(t, fresh, "/invitations/accept", url.Values{"display_name": {"Invitee"}, "password": {chosen}, "password_confirmation": {chosen}})
	require.Equal(t, http.StatusOK, sent.status, sent.body)
	mails = b.confirmationMails(t, freshEmail)
	require.Len(t, mails, 2)
	second, _ := b.linkPath(t, mails[1].Link)

	replaced := invitee.get(t, first)
	require.Equal(t, http.StatusBadRequest, replaced.status, "a newer confirmation replaces the older one")
	require.Contains(t, replaced.body, "This confirmation link is not valid")

	// Opening the link changes nothing by itself; the button confirms.
	page := invitee.get(t, second)
	require.Equal(t, http.StatusOK, page.status, page.body)
	requirePageHeaders(t, page)
	require.Contains(t, page.body, "Confirm and create the account")
	require.Contains(t, page.body, "<dd>"+freshEmail+"</dd>")
	require.Zero(t, b.accountCount(t, freshEmail))

	done := invitee.submit(t, second, "/invitations/confirm", url.Values{})
	require.Equal(t, http.StatusSeeOther, done.status, done.body)
	require.Equal(t, "/sign-in?notice=invitation_accepted", done.header.Get("Location"))
	require.Equal(t, 1, b.accountCount(t, freshEmail))

	invitee.signIn(t, freshEmail, chosen)
	home := invitee.get(t, "/")
	require.Contains(t, home.body, "Signed in as "+freshEmail)
	require.Contains(t, home.body, "<p class=\"muted\">Invitee</p>")
	require.Regexp(t, `<td><a href="/w/ws_[a-z0-9]+/runs">Default workspace</a></td>.*<span class="badge">editor</span>`, home.body)

	// The link works once.
	again := b.browser(t).get(t, second)
	require.Equal(t, http.StatusBadRequest, again.status)
	require.Contains(t, again.body, "This confirmation link is not valid")
	require.Equal(t, http.StatusGone, b.browser(t).get(t, fresh).status, "the invitation is accepted")
}

// TestConfirmationLinkExpires: a confirmation link past its expiry is refused
// (410) and creates no account.
func TestConfirmationLinkExpires(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const email = "late@example.com"
	path := b.invite(t, email, "viewer", false)
	br := b.browser(t)
	const pw = "late password 1"
	b.secret(pw)
	sent := br.submit(t, path, "/invitations/accept", url.Values{"password": {pw}, "password_confirmation": {pw}})
	require.Equal(t, http.StatusOK, sent.status, sent.body)
	mails := b.confirmationMails(t, email)
	require.Len(t, mails, 1)
	link, _ := b.linkPath(t, mails[0].Link)
	form := br.get(t, link)
	require.Equal(t, http.StatusOK, form.status, form.body)

	b.exec(t, `UPDATE invitation_confirmation SET expires_at = now() - interval '1 second'`)
	require.Equal(t, http.StatusGone, br.get(t, link).status)
	late := br.post(t, "/invitations/confirm", url.Values{"token": {strings.TrimPrefix(link, "/invitations/confirm?token=")}, "csrf_token": {hiddenFields(form.body)["csrf_token"]}})
	require.Equal(t, http.StatusGone, late.status, late.body)
	require.Contains(t, late.body, "This confirmation link has expired")
	require.Zero(t, b.accountCount(t, email))
}
