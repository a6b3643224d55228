package console_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apitest"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/ratelimit"
)

func TestHomeSignedOut(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.browser(t).get(t, "/")
	require.Equal(t, http.StatusOK, p.status)
	requirePageHeaders(t, p)
	for _, want := range []string{`href="/sign-in"`, `href="/api/v1/docs"`, `href="/api/v1/openapi.json"`, `href="/healthz"`, `href="/readyz"`, `href="/console/assets/console.css"`} {
		require.Contains(t, p.body, want)
	}
	require.NotContains(t, p.body, "Signed in as")
}

func TestSignInAndOut(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)

	form := br.get(t, "/sign-in")
	require.Equal(t, http.StatusOK, form.status)
	requirePageHeaders(t, form)
	require.NotEmpty(t, hiddenFields(form.body)["csrf_token"])
	csrf := form.header.Get("Set-Cookie")
	require.Contains(t, csrf, "svc_csrf=")
	require.Contains(t, csrf, "HttpOnly")
	require.Contains(t, csrf, "SameSite=Lax")

	p := br.submit(t, "/sign-in", "/sign-in", url.Values{"email": {"ADMIN@example.com"}, "password": {adminPassword}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	require.Equal(t, "/", p.header.Get("Location"))
	ck := p.header.Get("Set-Cookie")
	for _, want := range []string{"svc_session=", "Path=/", "HttpOnly", "SameSite=Lax", "Max-Age=1209"} {
		require.Contains(t, ck, want)
	}
	require.NotContains(t, ck, "Secure", "the test process is served over http")
	token := br.cookie("svc_session")
	require.Len(t, token, 43, "256 bits, base64url")

	var stored []byte
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT token_hash FROM login_session`).Scan(&stored))
	require.Len(t, stored, 32, "only the SHA-256 is stored")
	require.NotContains(t, string(stored), token)

	home := br.get(t, "/")
	requirePageHeaders(t, home)
	require.Equal(t, "admin@example.com", br.signedInAs(t), "e-mail addresses match whatever their case")
	require.Contains(t, home.body, b.admin.WorkspaceID)
	require.Contains(t, home.body, `<span>Default organization</span><span class="badge">owner</span>`)
	require.Regexp(t, `<td><a href="/w/`+b.admin.WorkspaceID+`/runs">Default workspace</a></td><td class="id"><code>`+b.admin.WorkspaceID+`</code></td><td class="role"><span class="badge">admin</span>`, home.body)
	require.Contains(t, home.body, `action="/sign-out"`)

	out := br.submit(t, "/", "/sign-out", nil)
	require.Equal(t, http.StatusSeeOther, out.status, out.body)
	require.Equal(t, "/sign-in?notice=signed_out", out.header.Get("Location"))
	require.Contains(t, out.header.Get("Set-Cookie"), "svc_session=;")
	require.Empty(t, br.signedInAs(t))
	notice := br.get(t, "/sign-in?notice=signed_out")
	require.Contains(t, notice.body, "You are signed out.")
	require.NotContains(t, br.get(t, "/sign-in?notice=%3Cb%3Ehi").body, "<b>hi", "unknown notices show nothing")

	// The old cookie is dead on the server, not just forgotten by the browser.
	thief := b.browser(t)
	thief.setCookie("svc_session", token)
	require.Empty(t, thief.signedInAs(t))
	var revoked bool
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT revoked_at IS NOT NULL FROM login_session`).Scan(&revoked))
	require.True(t, revoked)

	// Signing out when signed out is no error.
	again := br.submit(t, "/sign-in", "/sign-out", nil)
	require.Equal(t, http.StatusSeeOther, again.status)
}

func TestSignInReplacesTheBrowsersSession(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	br.signIn(t, b.admin.Email, adminPassword)
	first := br.cookie("svc_session")
	br.signIn(t, b.admin.Email, adminPassword)
	require.NotEqual(t, first, br.cookie("svc_session"), "a new sign-in gets a new token")
	other := b.browser(t)
	other.setCookie("svc_session", first)
	require.Empty(t, other.signedInAs(t), "the session it replaced is revoked")
	require.Equal(t, b.admin.Email, br.signedInAs(t))
}

func TestSecureCookiesOverHTTPS(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *config.Config) { c.Server.PublicURL = "https://svc.example.com" })
	br := b.browser(t)
	p := br.get(t, "/sign-in")
	require.Contains(t, p.header.Get("Set-Cookie"), "; Secure")
	csrf := hiddenFields(p.body)["csrf_token"]
	// The jar keeps Secure cookies away from http, as a browser would: send it by hand.
	cookie := strings.SplitN(p.header.Get("Set-Cookie"), ";", 2)[0]
	resp := br.post(t, "/sign-in", url.Values{"csrf_token": {csrf}, "email": {b.admin.Email}, "password": {adminPassword}}, "Cookie", cookie)
	require.Equal(t, http.StatusSeeOther, resp.status, resp.body)
	require.Contains(t, resp.header.Get("Set-Cookie"), "; Secure")
}

func TestSignInRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	disabled := b.member(t, "viewer", "disabled password")
	b.exec(t, `UPDATE user_account SET disabled_at = now() WHERE id = $1`, disabled.UserID)
	noPassword := b.member(t, "viewer", "unused password")
	b.exec(t, `UPDATE user_account SET password_hash = NULL WHERE id = $1`, noPassword.UserID)

	const refused = "The e-mail address or the password is wrong."
	cases := map[string]url.Values{
		"wrong password":   {"email": {b.admin.Email}, "password": {"wrong password 1"}},
		"unknown address":  {"email": {"nobody@example.com"}, "password": {"wrong password 2"}},
		"disabled account": {"email": {disabled.Email}, "password": {"disabled password"}},
		"no password":      {"email": {noPassword.Email}, "password": {"unused password"}},
		"oversized":        {"email": {b.admin.Email}, "password": {strings.Repeat("x", 2000)}},
	}
	for name, form := range cases {
		br := b.browser(t)
		p := br.submit(t, "/sign-in", "/sign-in", form)
		require.Equal(t, http.StatusUnprocessableEntity, p.status, name)
		requirePageHeaders(t, p)
		require.Contains(t, p.body, refused, name)
		require.Contains(t, p.body, `value="`+form.Get("email")+`"`, "%s: the address is kept", name)
		require.NotContains(t, p.body, form.Get("password"), "%s: a password is never sent back", name)
		require.Empty(t, br.cookie("svc_session"), name)
	}

	br := b.browser(t)
	p := br.submit(t, "/sign-in", "/sign-in", url.Values{"email": {b.admin.Email}})
	require.Equal(t, http.StatusUnprocessableEntity, p.status)
	require.Contains(t, p.body, "Enter your e-mail address and your password.")

	var sessions int
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT count(*) FROM login_session`).Scan(&sessions))
	require.Zero(t, sessions)
}

func TestCSRF(t *testing.T) {
	t.Parallel()
	b := setup(t)
	good := url.Values{"email": {b.admin.Email}, "password": {adminPassword}}
	with := func(token string) url.Values {
		v := url.Values{"csrf_token": {token}}
		for k, x := range good {
			v[k] = x
		}
		return v
	}
	refused := func(t *testing.T, p page, what string) {
		t.Helper()
		require.Equal(t, http.StatusForbidden, p.status, what)
		requirePageHeaders(t, p)
		require.Contains(t, p.body, "The form has expired", what)
	}

	br := b.browser(t)
	token := hiddenFields(br.get(t, "/sign-in").body)["csrf_token"]
	refused(t, br.post(t, "/sign-in", good), "no token")
	// Change the first character to a different one, whatever it was.
	wrong := "A" + token[1:]
	if token[0] == 'A' {
		wrong = "B" + token[1:]
	}
	refused(t, br.post(t, "/sign-in", with(wrong)), "wrong token")
	refused(t, br.post(t, "/sign-in", with(token), "Origin", "https://evil.example"), "another site's origin")

	other := b.browser(t)
	otherToken := hiddenFields(other.get(t, "/sign-in").body)["csrf_token"]
	refused(t, br.post(t, "/sign-in", with(otherToken)), "another browser's token")

	fresh := b.browser(t)
	refused(t, fresh.post(t, "/sign-in", with(token)), "no svc_csrf cookie")

	form := br.post(t, "/sign-in", with(token))
	require.Equal(t, http.StatusSeeOther, form.status, "the right token passes")

	// Signed in, forms need the session's token: the signed-out one no longer works.
	refused(t, br.post(t, "/sign-out", url.Values{"csrf_token": {token}}), "pre-sign-in token after sign-in")
	require.Equal(t, b.admin.Email, br.signedInAs(t), "a refused sign-out changes nothing")

	bad := br.post(t, "/sign-out", nil, "Content-Type", "text/plain")
	require.Equal(t, http.StatusBadRequest, bad.status)
	require.Contains(t, bad.body, "The form could not be read")
}

func TestSessionExpiryAndDisabledUser(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.member(t, "editor", "member password")
	br := b.browser(t)
	br.signIn(t, m.Email, "member password")
	require.Equal(t, m.Email, br.signedInAs(t))
	home := br.get(t, "/")
	require.Contains(t, home.body, `<span class="badge">editor</span>`)

	b.exec(t, `UPDATE user_account SET disabled_at = now() WHERE id = $1`, m.UserID)
	require.Empty(t, br.signedInAs(t), "a disabled user's session is refused at once")
	b.exec(t, `UPDATE user_account SET disabled_at = NULL WHERE id = $1`, m.UserID)
	require.Equal(t, m.Email, br.signedInAs(t), "enabling restores the session")

	b.exec(t, `UPDATE login_session SET expires_at = now() - interval '1 second'`)
	require.Empty(t, br.signedInAs(t), "an expired session is signed out")
}

func TestRateLimitedSignIn(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *config.Config) {
		c.Limits.SignInPerAccountPerClientPerMinute = 3
		c.Limits.SignInPerAddressPerMinute = 5
	})
	br := b.browser(t)
	wrong := url.Values{"email": {b.admin.Email}, "password": {"wrong password"}}
	for i := range 3 {
		require.Equal(t, http.StatusUnprocessableEntity, br.submit(t, "/sign-in", "/sign-in", wrong).status, "attempt %d", i+1)
	}
	p := br.submit(t, "/sign-in", "/sign-in", url.Values{"email": {b.admin.Email}, "password": {adminPassword}})
	require.Equal(t, http.StatusTooManyRequests, p.status, "over the account's limit even the right password waits")
	requirePageHeaders(t, p)
	retry, err := strconv.Atoi(p.header.Get("Retry-After"))
	require.NoError(t, err)
	require.True(t, retry >= 1 && retry <= 60, "Retry-After %d", retry)
	require.Contains(t, p.body, "Too many attempts.")
	require.Empty(t, br.cookie("svc_session"))

	// Other accounts from the same address: the address has 5 attempts a minute
	// and used 4 (the refused attempt was not counted against the account, but
	// was against the address).
	other := url.Values{"email": {"someone@example.com"}, "password": {"other password"}}
	require.Equal(t, http.StatusUnprocessableEntity, br.submit(t, "/sign-in", "/sign-in", other).status)
	p = br.submit(t, "/sign-in", "/sign-in", url.Values{"email": {"else@example.com"}, "password": {"other password"}})
	require.Equal(t, http.StatusTooManyRequests, p.status, "over the address's limit")
	require.NotEmpty(t, p.header.Get("Retry-After"))
}

// TestSignInFailuresDoNotLockTheOwnerOut: a client that keeps guessing an
// account's password is stopped, but the owner signs in from another client
// address; a guess spread over many client addresses still meets the
// account's ceiling.
func TestSignInFailuresDoNotLockTheOwnerOut(t *testing.T) {
	t.Parallel()
	b := setup(t, trustLoopback, func(c *config.Config) {
		c.Limits.SignInPerAccountPerClientPerMinute = 10
		c.Limits.SignInPerAccountPerMinute = 13
	})
	attacker := b.browser(t)
	attacker.from = "198.51.100.66"
	wrong := url.Values{"email": {b.admin.Email}, "password": {"wrong password"}}
	for i := range 10 {
		require.Equal(t, http.StatusUnprocessableEntity, attacker.submit(t, "/sign-in", "/sign-in", wrong).status, "attempt %d", i+1)
	}
	p := attacker.submit(t, "/sign-in", "/sign-in", wrong)
	require.Equal(t, http.StatusTooManyRequests, p.status)
	require.NotEmpty(t, p.header.Get("Retry-After"))

	owner := b.browser(t)
	owner.from = "203.0.113.10"
	owner.signIn(t, b.admin.Email, adminPassword)
	require.Equal(t, b.admin.Email, owner.signedInAs(t), "the owner is not locked out by another client's failures")

	p = attacker.submit(t, "/sign-in", "/sign-in", url.Values{"email": {b.admin.Email}, "password": {adminPassword}})
	require.Equal(t, http.StatusTooManyRequests, p.status, "the attacker's client stays refused, even with the right password")
	require.Empty(t, attacker.cookie("svc_session"))

	// A distributed guess: the ceiling has counted eleven attempts (the
	// attacker's ten and the owner's; refused attempts are not counted), so two
	// more clients fit under it and the third is refused. (A slow run may let a
	// few more in as the oldest attempts leave the sliding window.)
	var refused page
	for i := range 12 {
		br := b.browser(t)
		br.from = "192.0.2." + strconv.Itoa(10+i)
		p := br.submit(t, "/sign-in", "/sign-in", wrong)
		if p.status == http.StatusTooManyRequests {
			refused = p
			break
		}
		require.Equal(t, http.StatusUnprocessableEntity, p.status)
	}
	require.Equal(t, http.StatusTooManyRequests, refused.status, "the account's ceiling stops a guess spread over many clients")
	require.NotEmpty(t, refused.header.Get("Retry-After"))
	require.Contains(t, refused.body, "Too many attempts.")
}

// TestSignInWithoutRedis: while Redis is lost, sign-in works without limits.
func TestSignInWithoutRedis(t *testing.T) {
	t.Parallel()
	proxy, redisURL := apitest.ProxyURL(t, apitest.RedisURL(t))
	b := setup(t, func(c *config.Config) {
		c.Redis.URL = redisURL
		c.Limits.SignInPerAccountPerMinute = 1
	})
	br := b.browser(t)
	wrong := url.Values{"email": {b.admin.Email}, "password": {"wrong password"}}
	require.Equal(t, http.StatusUnprocessableEntity, br.submit(t, "/sign-in", "/sign-in", wrong).status)
	require.Equal(t, http.StatusTooManyRequests, br.submit(t, "/sign-in", "/sign-in", wrong).status)

	proxy.Cut()
	time.Sleep(ratelimit.DenialMemory) // the process remembers the last refusal that long
	for range 3 {
		require.Equal(t, http.StatusUnprocessableEntity, br.submit(t, "/sign-in", "/sign-in", wrong).status, "no limit without Redis")
	}
	br.signIn(t, b.admin.Email, adminPassword)
	require.Equal(t, b.admin.Email, br.signedInAs(t), "sessions live in PostgreSQL")
}

func TestStylesheet(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser(t)
	css := br.get(t, "/console/assets/console.css")
	require.Equal(t, http.StatusOK, css.status)
	require.Equal(t, "text/css; charset=utf-8", css.header.Get("Content-Type"))
	require.Equal(t, "nosniff", css.header.Get("X-Content-Type-Options"))
	require.Contains(t, css.body, ".card")
	etag := css.header.Get("ETag")
	require.NotEmpty(t, etag)

	req, err := http.NewRequest(http.MethodGet, b.h.URL+"/console/assets/console.css", nil)
	require.NoError(t, err)
	req.Header.Set("If-None-Match", etag)
	require.Equal(t, http.StatusNotModified, br.do(t, req).status)
	require.Equal(t, http.StatusNotFound, br.get(t, "/console/assets/nope.js").status)
}
