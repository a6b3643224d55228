package console

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/invitation"
)

// Pages of an invitation that cannot be accepted: 400 for a missing, malformed
// or unknown token; 410 for an accepted, revoked or expired invitation; 403
// for a disabled account; 409 when a concurrent acceptance got in the way.
var (
	msgInvitationUnknown  = message{"This invitation link is not valid", "The invitation link is incomplete or unknown. Copy the whole link from the mail, or ask the person who invited you to send a new invitation.", "/", "Go to the start page"}
	msgInvitationAccepted = message{"This invitation was already accepted", "The invitation has been used already. If it was you, sign in.", "/sign-in", "Sign in"}
	msgInvitationRevoked  = message{"This invitation was withdrawn", "An administrator revoked the invitation. Ask them for a new one if you still need access.", "/", "Go to the start page"}
	msgInvitationExpired  = message{"This invitation has expired", "Invitations can be accepted for a limited time only. Ask the person who invited you to send a new one.", "/", "Go to the start page"}
	msgAccountDisabled    = message{"This account is disabled", "The account for this e-mail address is disabled, so it cannot accept invitations. Ask your operator.", "/", "Go to the start page"}
	msgConfirmUnknown     = message{"This confirmation link is not valid", "The link is incomplete, was already used, or a newer one replaced it. Copy the whole link from the latest mail, or accept the invitation again.", "/", "Go to the start page"}
	msgConfirmExpired     = message{"This confirmation link has expired", "Confirmation links work for a short time only. Open the invitation again and accept it to get a new one.", "/", "Go to the start page"}
	msgAcceptConflict     = message{"Please try again", "Someone else changed this invitation or account at the same moment. Go back, reload the page and try again.", "/", "Go to the start page"}
)

// acceptForm shows the invitation and asks for a password
// (GET /invitations/accept?token=...). The page is the same whether or not the
// address has an account: it asks for the account's password or a new one in
// the same words, so the inviter, who holds the link too, learns nothing. The
// token travels on in a hidden field.
func (c *Console) acceptForm(r *request) error {
	token := r.ec.QueryParam("token")
	return c.showInvitation(r, http.StatusOK, token, view{})
}

// accept accepts the invitation (POST /invitations/accept): 303 to the sign-in
// page for the password of the address's account; for any other password the
// "check your mail" page, the same whether or not the address has an account
// (a new address is mailed a confirmation link, an existing account is told of
// the attempt); the form again with 422 when the password or name is refused,
// or with 429 and Retry-After over the acceptance rate limits.
func (c *Console) accept(r *request) error {
	token := r.form.Get("token")
	form := view{Form: map[string]string{"display_name": r.form.Get("display_name")}}
	pw := r.form.Get("password")
	// The password is typed twice in every case: the form cannot know (and must
	// not show) whether it is an existing account's or a new one.
	if pw != r.form.Get("password_confirmation") {
		form.Error = "Type the password again."
		form.Fields = map[string]string{"password_confirmation": "The two passwords differ."}
		return c.showInvitation(r, http.StatusUnprocessableEntity, token, form)
	}
	res, err := c.invitations.Accept(r.ec.Request().Context(), invitation.AcceptInput{
		Token: token, Password: pw, DisplayName: r.form.Get("display_name"), ClientAddr: c.clientAddr(r.ec.Request()),
	})
	if err == nil && res.ConfirmationSent {
		p, err := c.invitations.Preview(r.ec.Request().Context(), token)
		if err != nil {
			return c.invitationError(r, err)
		}
		return c.render(r, http.StatusOK, "accept_sent", view{Title: "Check your mail", Data: p.Email})
	}
	if err == nil {
		return r.ec.Redirect(http.StatusSeeOther, "/sign-in?notice=invitation_accepted")
	}
	ae, ok := apperr.As(err)
	switch {
	case ok && ae.Kind == apperr.KindRateLimited:
		seconds := ae.RetryAfterSeconds()
		r.ec.Response().Header().Set("Retry-After", strconv.Itoa(seconds))
		form.Error = fmt.Sprintf("Too many attempts to accept this invitation. Wait %s and try again.", plural(seconds, "second"))
		return c.showInvitation(r, http.StatusTooManyRequests, token, form)
	case ok && ae.Kind == apperr.KindInvalidArgument:
		form.Error = "Check the fields below."
		form.Fields = map[string]string{}
		for _, d := range ae.Details {
			form.Fields[d.Field] = sentence(d.Reason)
		}
		if form.Fields["token"] != "" {
			return c.message(r, http.StatusBadRequest, msgInvitationUnknown)
		}
		return c.showInvitation(r, http.StatusUnprocessableEntity, token, form)
	}
	return c.invitationError(r, err)
}

// showInvitation renders the accept form for token with status, or why the
// invitation cannot be accepted.
func (c *Console) showInvitation(r *request, status int, token string, v view) error {
	p, err := c.invitations.Preview(r.ec.Request().Context(), token)
	if err != nil {
		return c.invitationError(r, err)
	}
	v.Title, v.Data = "Accept the invitation", p
	if v.Form == nil {
		v.Form = map[string]string{}
	}
	v.Form["token"] = token
	return c.render(r, status, "accept", v)
}

// confirmForm shows what a mailed confirmation link accepts, with a button
// (GET /invitations/confirm?token=...): following a link changes nothing by
// itself, so a mail scanner that opens it accepts nothing.
func (c *Console) confirmForm(r *request) error {
	token := r.ec.QueryParam("token")
	p, err := c.invitations.CheckConfirmation(r.ec.Request().Context(), token)
	if err != nil {
		return c.invitationError(r, err)
	}
	return c.render(r, http.StatusOK, "confirm", view{Title: "Confirm the invitation", Data: p, Form: map[string]string{"token": token}})
}

// confirm creates the account with the password chosen at acceptance and
// accepts the invitation (POST /invitations/confirm): 303 to the sign-in page.
func (c *Console) confirm(r *request) error {
	if _, err := c.invitations.Confirm(r.ec.Request().Context(), r.form.Get("token")); err != nil {
		return c.invitationError(r, err)
	}
	return r.ec.Redirect(http.StatusSeeOther, "/sign-in?notice=invitation_accepted")
}

// invitationError renders why an invitation or its confirmation link cannot
// be used, or fails.
func (c *Console) invitationError(r *request, err error) error {
	switch {
	case errors.Is(err, invitation.ErrConfirmationUnknown):
		return c.message(r, http.StatusBadRequest, msgConfirmUnknown)
	case errors.Is(err, invitation.ErrConfirmationExpired):
		return c.message(r, http.StatusGone, msgConfirmExpired)
	case errors.Is(err, invitation.ErrNotFound):
		return c.message(r, http.StatusBadRequest, msgInvitationUnknown)
	case errors.Is(err, invitation.ErrAccepted):
		return c.message(r, http.StatusGone, msgInvitationAccepted)
	case errors.Is(err, invitation.ErrRevoked):
		return c.message(r, http.StatusGone, msgInvitationRevoked)
	case errors.Is(err, invitation.ErrExpired):
		return c.message(r, http.StatusGone, msgInvitationExpired)
	case errors.Is(err, invitation.ErrAccountDisabled):
		return c.message(r, http.StatusForbidden, msgAccountDisabled)
	case apperr.KindOf(err) == apperr.KindAlreadyExists || apperr.KindOf(err) == apperr.KindConflict:
		return c.message(r, http.StatusConflict, msgAcceptConflict)
	}
	return err
}
