package console_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/session"
)

// resetMail is the identity_mail delivery of a reset link, opened.
type resetMail struct {
	payload session.ResetMailPayload
	url     string
}

// resetMails returns the queued password reset mails, oldest first, with their
// sealed links opened as the mail sender would.
func (b *testBundle) resetMails(t *testing.T) []resetMail {
	t.Helper()
	rows, err := b.h.App.Pool.Query(t.Context(), `SELECT payload, sealed FROM outbox WHERE kind = 'identity_mail' ORDER BY id`)
	require.NoError(t, err)
	defer rows.Close()
	var out []resetMail
	for rows.Next() {
		var raw, sealed []byte
		require.NoError(t, rows.Scan(&raw, &sealed))
		var m resetMail
		require.NoError(t, json.Unmarshal(raw, &m.payload))
		require.NotContains(t, string(raw), "token", "the clear payload holds no secret")
		plain, err := b.h.App.Keyring.Open(sealed, []byte("identity_mail:"+m.payload.MailLinkID))
		require.NoError(t, err)
		var secret session.ResetMailSecret
		require.NoError(t, json.Unmarshal(plain, &secret))
		m.url = secret.ResetURL
		out = append(out, m)
	}
	require.NoError(t, rows.Err())
	return out
}

// linkPath turns a mailed URL into the path the test process serves, and
// remembers its token as a secret.
func (b *testBundle) linkPath(t *testing.T, link string) (path, token string) {
	t.Helper()
	u, err := url.Parse(link)
	require.NoError(t, err)
	token = u.Query().Get("token")
	require.Len(t, token, 43)
	b.secret(token)
	return u.Path + "?" + u.RawQuery, token
}

func TestPasswordReset(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *config.Config) {
		c.Server.PublicURL = "https://svc.example.com/"
		c.Auth.MailLinkTTLSeconds = 1800
	})
	signedIn := b.browser(t) // a session from before the reset
	signedIn.signIn(t, b.admin.Email, adminPassword)

	br := b.browser(t)
	form := br.get(t, "/password/forgot")
	require.Equal(t, http.StatusOK, form.status)
	requirePageHeaders(t, form)
	sent := br.submit(t, "/password/forgot", "/password/forgot", url.Values{"email": {b.admin.Email}})
	require.Equal(t, http.StatusOK, sent.status, sent.body)
	require.Contains(t, sent.body, "If an account exists for <strong>admin@example.com</strong>")
	require.Contains(t, sent.body, "expires after 30 minutes")

	mails := b.resetMails(t)
	require.Len(t, mails, 1)
	m := mails[0]
	require.Equal(t, "password_reset", m.payload.Template)
	require.Equal(t, b.admin.Email, m.payload.To)
	require.Equal(t, b.admin.UserID, m.payload.UserID)
	require.WithinDuration(t, time.Now().Add(30*time.Minute), m.payload.ExpiresAt, time.Minute)
	require.True(t, strings.HasPrefix(m.url, "https://svc.example.com/password/reset?token="), m.url)
	path, token := b.linkPath(t, m.url)

	page := br.get(t, path)
	require.Equal(t, http.StatusOK, page.status, page.body)
	requirePageHeaders(t, page)
	require.Contains(t, page.body, "For <strong>admin@example.com</strong>")
	require.Equal(t, token, hiddenFields(page.body)["token"])

	const newPassword = "a brand new password"
	refusals := map[string]struct {
		pw, confirm, field string
	}{
		"short":    {"short", "short", "at least 8 characters"},
		"mismatch": {newPassword, newPassword + "!", "The two passwords differ."},
	}
	for name, r := range refusals {
		p := br.submit(t, path, "/password/reset", url.Values{"password": {r.pw}, "password_confirmation": {r.confirm}})
		require.Equal(t, http.StatusUnprocessableEntity, p.status, name)
		require.Contains(t, p.body, r.field, name)
		require.NotContains(t, p.body, `value="`+r.pw, "%s: the password is not sent back", name)
		require.Equal(t, token, hiddenFields(p.body)["token"], "%s: the form keeps the link", name)
	}

	done := br.submit(t, path, "/password/reset", url.Values{"password": {newPassword}, "password_confirmation": {newPassword}})
	require.Equal(t, http.StatusSeeOther, done.status, done.body)
	require.Equal(t, "/sign-in?notice=password_reset", done.header.Get("Location"))
	require.Contains(t, br.get(t, "/sign-in?notice=password_reset").body, "Your password is changed")

	require.Empty(t, signedIn.signedInAs(t), "every session of the account is revoked")
	wrong := br.submit(t, "/sign-in", "/sign-in", url.Values{"email": {b.admin.Email}, "password": {adminPassword}})
	require.Equal(t, http.StatusUnprocessableEntity, wrong.status, "the old password is gone")
	br.signIn(t, b.admin.Email, newPassword)

	// The link works once.
	used := br.get(t, path)
	require.Equal(t, http.StatusGone, used.status)
	requirePageHeaders(t, used)
	require.Contains(t, used.body, "This link can no longer be used")
	again := br.post(t, "/password/reset", url.Values{"csrf_token": {hiddenFields(br.get(t, "/").body)["csrf_token"]}, "token": {token}, "password": {"another password"}, "password_confirmation": {"another password"}})
	require.Equal(t, http.StatusGone, again.status)

	var audited int
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(),
		`SELECT count(*) FROM audit_event WHERE action = 'user.password_reset' AND subject_id = $1 AND changed_fields = '{password}'`, b.admin.UserID).Scan(&audited))
	require.Equal(t, 1, audited)
}

func TestPasswordResetLinks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	for _, path := range []string{"/password/reset", "/password/reset?token=short", "/password/reset?token=" + strings.Repeat("A", 43)} {
		p := br.get(t, path)
		require.Equal(t, http.StatusBadRequest, p.status, path)
		require.Contains(t, p.body, "This link is not valid", path)
	}

	ask := func() (path, token string) {
		p := br.submit(t, "/password/forgot", "/password/forgot", url.Values{"email": {b.admin.Email}})
		require.Equal(t, http.StatusOK, p.status)
		mails := b.resetMails(t)
		return b.linkPath(t, mails[len(mails)-1].url)
	}

	expired, _ := ask()
	b.exec(t, `UPDATE mail_link SET expires_at = now() - interval '1 second'`)
	require.Equal(t, http.StatusGone, br.get(t, expired).status, "an expired link")

	first, _ := ask()
	second, _ := ask()
	require.Equal(t, http.StatusOK, br.get(t, first).status, "every outstanding link works")
	p := br.submit(t, second, "/password/reset", url.Values{"password": {"the second one"}, "password_confirmation": {"the second one"}})
	require.Equal(t, http.StatusSeeOther, p.status)
	require.Equal(t, http.StatusGone, br.get(t, first).status, "using one link revokes the others")

	disabledLink, _ := ask()
	b.exec(t, `UPDATE user_account SET disabled_at = now()`)
	require.Equal(t, http.StatusGone, br.get(t, disabledLink).status, "a disabled account's link cannot be used")
}

func TestForgotPasswordRevealsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	disabled := b.member(t, "viewer", "disabled password")
	b.exec(t, `UPDATE user_account SET disabled_at = now() WHERE id = $1`, disabled.UserID)
	noPassword := b.member(t, "viewer", "ignored password")
	b.exec(t, `UPDATE user_account SET password_hash = NULL WHERE id = $1`, noPassword.UserID)
	br := b.browser(t)

	answer := func(email string) string {
		p := br.submit(t, "/password/forgot", "/password/forgot", url.Values{"email": {email}})
		require.Equal(t, http.StatusOK, p.status, email)
		return strings.ReplaceAll(p.body, email, "EMAIL")
	}
	known := answer(b.admin.Email)
	require.Equal(t, known, answer("nobody@example.com"), "an unknown address gets the same page")
	require.Equal(t, known, answer(disabled.Email), "a disabled account gets the same page")
	require.Equal(t, known, answer(noPassword.Email), "an account without a password can set one")

	mails := b.resetMails(t)
	require.Len(t, mails, 2, "mail goes to enabled accounts only")
	require.Equal(t, b.admin.Email, mails[0].payload.To)
	require.Equal(t, noPassword.Email, mails[1].payload.To)

	p := br.submit(t, "/password/forgot", "/password/forgot", url.Values{"email": {"not an address"}})
	require.Equal(t, http.StatusUnprocessableEntity, p.status)
	require.Contains(t, p.body, "Enter a valid e-mail address.")
}

func TestForgotPasswordIsRateLimited(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *config.Config) { c.Limits.SignInPerAccountPerMinute = 2 })
	br := b.browser(t)
	for range 2 {
		require.Equal(t, http.StatusOK, br.submit(t, "/password/forgot", "/password/forgot", url.Values{"email": {b.admin.Email}}).status)
	}
	p := br.submit(t, "/password/forgot", "/password/forgot", url.Values{"email": {b.admin.Email}})
	require.Equal(t, http.StatusTooManyRequests, p.status)
	require.NotEmpty(t, p.header.Get("Retry-After"))
	require.Len(t, b.resetMails(t), 2, "no third mail")
	// Sign-in has buckets of its own.
	br.signIn(t, b.admin.Email, adminPassword)
}
