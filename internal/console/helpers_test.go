package console_test

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apitest"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/password"
	"github.com/svcdev/svc/internal/testfactory"
)

func init() {
	// The contract check decodes text/html and text/javascript; the console also
	// serves its stylesheet.
	openapi3filter.RegisterBodyDecoder("text/css", openapi3filter.PlainBodyDecoder)
}

// adminPassword is testfactory.Bootstrap's password.
const adminPassword = "correct horse battery"

type testBundle struct {
	h     *apitest.Harness
	admin testfactory.Admin

	// secrets collects every password, token and cookie a test used, to check
	// that the logs never show one.
	mu      sync.Mutex
	secrets []string
}

// setup starts a process with its own Redis key prefix (rate limit buckets of
// parallel tests must not meet) and bootstraps it. Its sweeps are paused: the
// tests look at revoked sessions and at used, revoked and expired links and
// invitations, which expire_credentials would delete at a random moment.
func setup(t *testing.T, configure ...func(*config.Config)) *testBundle {
	t.Helper()
	prefix := "svc-test-" + strings.ToLower(ulid.Make().String()) + ":"
	h := apitest.Start(t, apitest.Options{PauseSweeps: true, Configure: func(c *config.Config) {
		c.Redis.KeyPrefix = prefix
		for _, f := range configure {
			f(c)
		}
	}})
	b := &testBundle{h: h, admin: testfactory.Bootstrap(t, h.App.Pool)}
	b.secret(adminPassword)
	t.Cleanup(func() {
		logs := h.Logs.String()
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, s := range b.secrets {
			if strings.Contains(logs, s) {
				t.Errorf("the logs contain a secret (%d characters)", len(s))
			}
		}
	})
	return b
}

// trustLoopback makes the test client a trusted proxy, so that browsers can
// stand for different client addresses (browser.from).
func trustLoopback(c *config.Config) {
	c.Server.TrustedProxies = []string{"127.0.0.0/8", "::1/128"}
}

// secret remembers a value the logs must never contain.
func (b *testBundle) secret(s string) {
	b.mu.Lock()
	b.secrets = append(b.secrets, s)
	b.mu.Unlock()
}

func (b *testBundle) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	_, err := b.h.App.Pool.Exec(context.Background(), sql, args...)
	require.NoError(t, err)
}

// member adds a workspace member whose account has a password.
func (b *testBundle) member(t *testing.T, role, pw string) testfactory.Member {
	t.Helper()
	m := testfactory.AddMember(t, b.h.App.Pool, b.admin.OrganizationID, b.admin.WorkspaceID, testfactory.MemberOpts{WorkspaceRole: role})
	hash, err := password.Hash(pw)
	require.NoError(t, err)
	b.exec(t, `UPDATE user_account SET password_hash = $1 WHERE id = $2`, hash, m.UserID)
	b.secret(pw)
	return m
}

// browser is a client with a cookie jar that does not follow redirects, and
// checks every response against the contract.
type browser struct {
	b    *testBundle
	c    *http.Client
	jar  *cookiejar.Jar
	base *url.URL
	// from, when set, is the client address the browser claims through
	// X-Forwarded-For; it counts only when the harness trusts its proxy
	// (trustLoopback).
	from string
}

func (b *testBundle) browser(t *testing.T) *browser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	base, err := url.Parse(b.h.URL)
	require.NoError(t, err)
	return &browser{b: b, jar: jar, base: base, c: &http.Client{
		Transport:     b.h.HTTP.Transport,
		Jar:           jar,
		Timeout:       30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// page is a response with its body read.
type page struct {
	status int
	header http.Header
	body   string
	took   time.Duration
}

func (br *browser) do(t *testing.T, req *http.Request) page {
	t.Helper()
	if br.from != "" {
		req.Header.Set("X-Forwarded-For", br.from)
	}
	start := time.Now()
	resp, err := br.c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for _, ck := range br.jar.Cookies(br.base) {
		br.b.secret(ck.Value)
	}
	return page{status: resp.StatusCode, header: resp.Header, body: string(body), took: time.Since(start)}
}

func (br *browser) get(t *testing.T, path string) page {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, br.b.h.URL+path, nil)
	require.NoError(t, err)
	return br.do(t, req)
}

// post sends a form as a browser does, with header name, value pairs.
func (br *browser) post(t *testing.T, path string, form url.Values, header ...string) page {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, br.b.h.URL+path, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", br.b.h.URL)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	for _, k := range []string{"password", "password_confirmation"} {
		if v := form.Get(k); v != "" {
			br.b.secret(v)
		}
	}
	return br.do(t, req)
}

// submit opens formPath, fills the form's hidden fields (the CSRF token, a link
// token) into fields, and posts it to action.
func (br *browser) submit(t *testing.T, formPath, action string, fields url.Values) page {
	t.Helper()
	p := br.get(t, formPath)
	require.Equal(t, http.StatusOK, p.status, p.body)
	form := url.Values{}
	for k, v := range hiddenFields(p.body) {
		form.Set(k, v)
	}
	for k, v := range fields {
		form[k] = v
	}
	return br.post(t, action, form)
}

// signIn signs the browser in and requires success.
func (br *browser) signIn(t *testing.T, email, pw string) {
	t.Helper()
	p := br.submit(t, "/sign-in", "/sign-in", url.Values{"email": {email}, "password": {pw}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	require.Equal(t, "/", p.header.Get("Location"))
}

// cookie returns the browser's cookie of that name, or "".
func (br *browser) cookie(name string) string {
	for _, ck := range br.jar.Cookies(br.base) {
		if ck.Name == name {
			return ck.Value
		}
	}
	return ""
}

// setCookie puts a cookie in the browser's jar, as another browser would have it.
func (br *browser) setCookie(name, value string) {
	br.jar.SetCookies(br.base, []*http.Cookie{{Name: name, Value: value, Path: "/"}})
}

var hiddenRE = regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`)

// hiddenFields returns the hidden inputs of a page (the last one of a name wins).
func hiddenFields(body string) map[string]string {
	out := map[string]string{}
	for _, m := range hiddenRE.FindAllStringSubmatch(body, -1) {
		out[m[1]] = html.UnescapeString(m[2])
	}
	return out
}

// signedInAs returns the address the home page says is signed in, or "".
func (br *browser) signedInAs(t *testing.T) string {
	t.Helper()
	p := br.get(t, "/")
	require.Equal(t, http.StatusOK, p.status, p.body)
	m := regexp.MustCompile(`<h1>Signed in as ([^<]+)</h1>`).FindStringSubmatch(p.body)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

// requirePageHeaders checks what every console page carries.
func requirePageHeaders(t *testing.T, p page) {
	t.Helper()
	require.Equal(t, "text/html; charset=UTF-8", p.header.Get("Content-Type"))
	require.Equal(t, "no-store", p.header.Get("Cache-Control"))
	require.Equal(t, "DENY", p.header.Get("X-Frame-Options"))
	require.Equal(t, "nosniff", p.header.Get("X-Content-Type-Options"))
	csp := p.header.Get("Content-Security-Policy")
	require.Contains(t, csp, "default-src 'none'")
	require.Contains(t, csp, "frame-ancestors 'none'")
	require.Contains(t, csp, "script-src 'self';")
	require.NotContains(t, csp, "unsafe")
	// Scripts come only from the console's own files, never inline.
	for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAllString(p.body, -1) {
		require.Regexp(t, `^<script src="/console/assets/[a-z.]+\.js" defer></script`, tag+p.body[strings.Index(p.body, tag)+len(tag):][:8])
	}
	require.NotContains(t, p.body, "style=")
}
