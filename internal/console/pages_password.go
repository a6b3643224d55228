package console

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/session"
)

// Pages of a mailed link that cannot be used: 400 for a missing, malformed or
// unknown token, 410 for a used, revoked or expired one.
var (
	msgResetUnknown = message{"This link is not valid", "The password reset link is incomplete or unknown. Copy the whole link from the mail, or ask for a new one.", "/password/forgot", "Ask for a new link"}
	msgResetSpent   = message{"This link can no longer be used", "The password reset link has expired or was already used. Ask for a new one.", "/password/forgot", "Ask for a new link"}
)

// forgotForm asks for the address to mail a reset link to (GET /password/forgot).
func (c *Console) forgotForm(r *request) error {
	return c.render(r, http.StatusOK, "forgot", view{Title: "Reset your password"})
}

// forgot mails a reset link if the address has an enabled account (POST
// /password/forgot). The answer is the same whether or not it has one.
func (c *Console) forgot(r *request) error {
	email := r.form.Get("email")
	v := view{Title: "Reset your password", Form: map[string]string{"email": email}}
	err := c.sessions.RequestPasswordReset(r.ec.Request().Context(), session.ResetRequestInput{
		Email: email, ClientAddr: c.clientAddr(r.ec.Request()),
	})
	if err != nil {
		ae, ok := apperr.As(err)
		switch {
		case ok && ae.Kind == apperr.KindRateLimited:
			return c.rateLimited(r, "forgot", v, ae.RetryAfterSeconds())
		case ok && ae.Kind == apperr.KindInvalidArgument:
			v.Error = "Enter a valid e-mail address."
			return c.render(r, http.StatusUnprocessableEntity, "forgot", v)
		default:
			return err
		}
	}
	v.Title, v.Data = "Check your mail", humanDuration(c.mailLinkTTL)
	return c.render(r, http.StatusOK, "forgot_sent", v)
}

// resetForm asks for the new password if the link can be used (GET
// /password/reset?token=...). The token travels on in a hidden field.
func (c *Console) resetForm(r *request) error {
	token := r.ec.QueryParam("token")
	link, err := c.sessions.CheckResetLink(r.ec.Request().Context(), token)
	if err != nil {
		return c.linkError(r, err)
	}
	return c.render(r, http.StatusOK, "reset", view{Title: "Choose a new password", Form: map[string]string{"token": token}, Data: link.Email})
}

// reset sets the new password (POST /password/reset): 303 to the sign-in page,
// or the form again with 422 when the password is refused.
func (c *Console) reset(r *request) error {
	token := r.form.Get("token")
	err := c.sessions.ResetPassword(r.ec.Request().Context(), session.ResetPasswordInput{
		Token: token, Password: r.form.Get("password"), Confirmation: r.form.Get("password_confirmation"),
	})
	if err == nil {
		// Every session of the account was revoked, this browser's included.
		c.clearSession(r)
		return r.ec.Redirect(http.StatusSeeOther, "/sign-in?notice=password_reset")
	}
	if ae, ok := apperr.As(err); ok && ae.Kind == apperr.KindInvalidArgument && !errors.Is(err, session.ErrLinkUnknown) {
		v := view{Title: "Choose a new password", Form: map[string]string{"token": token}, Fields: map[string]string{}}
		for _, d := range ae.Details {
			v.Fields[d.Field] = sentence(d.Reason)
		}
		v.Error = "Choose another password."
		return c.render(r, http.StatusUnprocessableEntity, "reset", v)
	}
	return c.linkError(r, err)
}

// linkError renders why a reset link cannot be used, or fails.
func (c *Console) linkError(r *request, err error) error {
	switch {
	case errors.Is(err, session.ErrLinkUnknown):
		return c.message(r, http.StatusBadRequest, msgResetUnknown)
	case errors.Is(err, session.ErrLinkSpent):
		return c.message(r, http.StatusGone, msgResetSpent)
	}
	return err
}

// humanDuration writes a TTL the way a mail's reader thinks of it.
func humanDuration(d time.Duration) string {
	switch {
	case d >= 24*time.Hour && d%(24*time.Hour) == 0:
		return plural(int(d/(24*time.Hour)), "day")
	case d >= time.Hour && d%time.Hour == 0:
		return plural(int(d/time.Hour), "hour")
	case d >= time.Minute:
		return plural(int(d/time.Minute), "minute")
	}
	return plural(int(d/time.Second), "second")
}

// sentence capitalizes a service message for a form: "the two passwords
// differ" becomes "The two passwords differ."
func sentence(s string) string {
	if s == "" {
		return s
	}
	if s[0] >= 'a' && s[0] <= 'z' {
		s = string(s[0]-'a'+'A') + s[1:]
	}
	if strings.HasSuffix(s, ".") {
		return s
	}
	return s + "."
}
