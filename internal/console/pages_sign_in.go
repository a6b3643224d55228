package console

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/session"
)

// Notices the sign-in page shows after a redirect (?notice=...). Unknown
// values show nothing, so the query cannot put arbitrary text on the page.
var notices = map[string]string{
	"signed_out":          "You are signed out.",
	"password_reset":      "Your password is changed, and every session of your account was signed out. Sign in with the new password.",
	"invitation_accepted": "The invitation is accepted. Sign in to continue.",
}

// home shows who is signed in and where they belong, or, signed out, what svc
// is and where to sign in (GET /).
func (c *Console) home(r *request) error {
	if r.session == nil {
		return c.render(r, http.StatusOK, "home", view{Title: "Welcome"})
	}
	ov, err := c.sessions.Overview(r.ec.Request().Context(), r.session.PrincipalID)
	if err != nil {
		return err
	}
	return c.render(r, http.StatusOK, "home", view{Title: "Home", Data: ov})
}

// signInForm shows the sign-in form (GET /sign-in).
func (c *Console) signInForm(r *request) error {
	v := view{Title: "Sign in", Notice: notices[r.ec.QueryParam("notice")]}
	if next := safeNext(r.ec.QueryParam("next")); next != "" {
		v.Form = map[string]string{"next": next}
	}
	return c.render(r, http.StatusOK, "sign_in", v)
}

// safeNext returns next when it is a console workspace page of this site
// (where a sign-in may send the browser on to), else "".
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/w/") || strings.ContainsAny(next, "\\\r\n") || strings.Contains(next, "//") {
		return ""
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return ""
	}
	return next
}

// signIn checks the form and opens a session (POST /sign-in): 303 to the home
// page, or the form again with 422 (refused) or 429 (rate limited).
func (c *Console) signIn(r *request) error {
	email := r.form.Get("email")
	next := safeNext(r.form.Get("next"))
	v := view{Title: "Sign in", Form: map[string]string{"email": email, "next": next}}
	created, err := c.sessions.SignIn(r.ec.Request().Context(), session.SignInInput{
		Email: email, Password: r.form.Get("password"),
		ClientAddr: c.clientAddr(r.ec.Request()), PreviousToken: r.token,
	})
	if err != nil {
		ae, ok := apperr.As(err)
		switch {
		case errors.Is(err, session.ErrBadCredentials):
			v.Error = "The e-mail address or the password is wrong."
		case ok && ae.Kind == apperr.KindRateLimited:
			return c.rateLimited(r, "sign_in", v, ae.RetryAfterSeconds())
		case ok && ae.Kind == apperr.KindInvalidArgument:
			v.Error = "Enter your e-mail address and your password."
		default:
			return err
		}
		return c.render(r, http.StatusUnprocessableEntity, "sign_in", v)
	}
	c.setSession(r, created.Token, created.ExpiresAt)
	if next != "" {
		return r.ec.Redirect(http.StatusSeeOther, next)
	}
	return r.ec.Redirect(http.StatusSeeOther, "/")
}

// signOut revokes the browser's session and forgets its cookie (POST
// /sign-out), then shows the sign-in page. Signing out twice is no error.
func (c *Console) signOut(r *request) error {
	if r.token != "" {
		if err := c.sessions.SignOut(r.ec.Request().Context(), r.token); err != nil {
			return err
		}
	}
	c.clearSession(r)
	return r.ec.Redirect(http.StatusSeeOther, "/sign-in?notice=signed_out")
}
