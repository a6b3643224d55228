package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/svcdev/svc/internal/session"
)

// Cookie names.
const (
	sessionCookie = "svc_session"
	csrfCookie    = "svc_csrf"
	csrfField     = "csrf_token"
	// maxFormBytes bounds a form's body; the console's forms are tiny.
	maxFormBytes = 16 << 10
)

// loadSession resolves the session cookie. An unknown, expired or revoked
// session, or one of a disabled user, is simply signed out; only a database
// failure is an error.
func (c *Console) loadSession(r *request) error {
	ck, err := r.ec.Cookie(sessionCookie)
	if err != nil || ck.Value == "" {
		return nil
	}
	s, err := c.sessions.Resolve(r.ec.Request().Context(), ck.Value)
	if errors.Is(err, session.ErrNoSession) {
		return nil
	}
	if err != nil {
		return err
	}
	r.session, r.token = &s, ck.Value
	r.csrf = csrfToken("session", ck.Value)
	return nil
}

// csrfToken derives a form token from a secret only this browser holds (the
// session token, or the svc_csrf cookie before sign-in). The label keeps the
// two kinds apart, and the hash keeps the secret out of the page.
func csrfToken(label, secret string) string {
	sum := sha256.Sum256([]byte("svc console csrf\x00" + label + "\x00" + secret))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// ensureCSRF gives a signed-out browser its svc_csrf cookie, so that the forms
// of the page can carry a token bound to it.
func (c *Console) ensureCSRF(r *request) error {
	if r.session != nil {
		return nil
	}
	if ck, err := r.ec.Cookie(csrfCookie); err == nil && session.WellFormed(ck.Value) {
		r.csrf = csrfToken("browser", ck.Value)
		return nil
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	v := base64.RawURLEncoding.EncodeToString(b)
	r.ec.SetCookie(c.cookie(csrfCookie, v, time.Time{}))
	r.csrf = csrfToken("browser", v)
	return nil
}

// checkPost accepts a POST whose form carries the token of this browser's
// session (or, signed out, of its svc_csrf cookie), compared in constant time,
// and whose Origin, when the browser names one, is this host. SameSite=Lax
// cookies already keep other sites' forms from carrying the session; the
// token also stops forms from sibling subdomains and sign-in CSRF.
func (c *Console) checkPost(r *request) bool {
	req := r.ec.Request()
	if o := req.Header.Get("Origin"); o != "" && o != "null" {
		u, err := url.Parse(o)
		if err != nil || !strings.EqualFold(u.Host, req.Host) {
			return false
		}
	}
	expected := r.csrf
	if r.session == nil {
		ck, err := r.ec.Cookie(csrfCookie)
		if err != nil || !session.WellFormed(ck.Value) {
			return false
		}
		expected = csrfToken("browser", ck.Value)
		r.csrf = expected
	}
	got := r.form.Get(csrfField)
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(expected)) == 1
}

// readForm reads a POST's urlencoded body, bounded, into r.form.
func (c *Console) readForm(r *request) error {
	req := r.ec.Request()
	mt, _, err := mime.ParseMediaType(req.Header.Get("Content-Type"))
	if err != nil || mt != "application/x-www-form-urlencoded" {
		return errors.New("not a form")
	}
	req.Body = http.MaxBytesReader(r.ec.Response(), req.Body, maxFormBytes)
	if err := req.ParseForm(); err != nil {
		return err
	}
	r.form = req.PostForm
	return nil
}

// maxTokenPartBytes bounds the CSRF token part that starts an upload.
const maxTokenPartBytes = 256

// readUploadHead starts reading a multipart/form-data POST: its first part
// must be the csrf_token field, which it reads (bounded) into r.form so that
// the token is checked before any other byte of the body is read. The parts
// after it are left in r.parts for the handler to stream. A body whose first
// part is another is read no further and carries no token, so it is refused
// as a form without one.
func (c *Console) readUploadHead(r *request) error {
	req := r.ec.Request()
	mt, params, err := mime.ParseMediaType(req.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return errors.New("not a multipart form")
	}
	r.form = url.Values{}
	r.parts = multipart.NewReader(req.Body, params["boundary"])
	part, err := r.parts.NextPart()
	if err != nil {
		return err
	}
	defer part.Close()
	if part.FormName() != csrfField || part.FileName() != "" {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(part, maxTokenPartBytes+1))
	if err != nil {
		return err
	}
	if len(b) > maxTokenPartBytes {
		return errors.New("csrf_token part too large")
	}
	r.form.Set(csrfField, string(b))
	return nil
}

// cookie is a console cookie: HttpOnly, for the whole site, SameSite=Lax, and
// Secure when the service is served over https. A zero expires makes a cookie
// that lasts as long as the browser session.
func (c *Console) cookie(name, value string, expires time.Time) *http.Cookie {
	ck := &http.Cookie{
		Name: name, Value: value, Path: "/",
		HttpOnly: true, Secure: c.secure, SameSite: http.SameSiteLaxMode,
	}
	if !expires.IsZero() {
		ck.Expires = expires.UTC()
		ck.MaxAge = max(int(time.Until(expires).Seconds()), 1)
	}
	return ck
}

// setSession stores a new session's token in the browser.
func (c *Console) setSession(r *request, token string, expires time.Time) {
	r.ec.SetCookie(c.cookie(sessionCookie, token, expires))
}

// clearSession removes the session cookie from the browser.
func (c *Console) clearSession(r *request) {
	ck := c.cookie(sessionCookie, "", time.Time{})
	ck.MaxAge = -1
	r.ec.SetCookie(ck)
}

// clientAddr is the address rate limits count a request against
// (ratelimit.Clients.Addr).
func (c *Console) clientAddr(req *http.Request) string {
	return c.clients.Addr(req)
}
