package invitation_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/client"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/credexpiry"
	"github.com/svcdev/svc/internal/invitation"
	"github.com/svcdev/svc/internal/password"
	"github.com/svcdev/svc/internal/testfactory"
)

// trustLoopback makes the test client a trusted proxy, so that requests can
// stand for different client addresses (from).
func trustLoopback(c *config.Config) {
	c.Server.TrustedProxies = []string{"127.0.0.0/8", "::1/128"}
}

// from makes a request come from the client address addr.
func from(addr string) client.RequestEditorFn {
	return func(_ context.Context, req *http.Request) error {
		req.Header.Set("X-Forwarded-For", addr)
		return nil
	}
}

// TestAcceptIsRateLimited: the token's holder (the inviter included) cannot
// guess the password of the account an invitation is for: one client is
// refused with 429 rate_limited and Retry-After after a few wrong passwords,
// and keeps being refused; the invitee from another client address accepts
// with the right password; a guess spread over many client addresses meets the
// invitation's ceiling.
func TestAcceptIsRateLimited(t *testing.T) {
	t.Parallel()
	b := setup(t, trustLoopback, func(c *config.Config) {
		c.Limits.InvitationAcceptPerInvitationPerClientPerMinute = 5
		c.Limits.InvitationAcceptPerInvitationPerMinute = 8
	})
	m := testfactory.AddMember(t, b.h.App.Pool, b.admin.OrganizationID, b.admin.WorkspaceID, testfactory.MemberOpts{Password: "the members password"})
	token := b.keepToken(t, b.inviteOrganization(t, m.Email, "admin").InvitationUrl)
	accept := func(pw, addr string) *client.AcceptInvitationResponse {
		resp, err := b.h.API.AcceptInvitationWithResponse(t.Context(), client.AcceptInvitationRequest{Token: token, Password: &pw}, from(addr))
		require.NoError(t, err)
		return resp
	}
	for i := range 5 {
		resp := accept("a guessed password", "198.51.100.66")
		require.Equal(t, http.StatusAccepted, resp.StatusCode(), "attempt %d: %s", i+1, resp.Body)
	}
	resp := accept("a guessed password", "198.51.100.66")
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode(), string(resp.Body))
	require.Equal(t, "rate_limited", decodeError(t, resp.Body).Code)
	retry, err := strconv.Atoi(resp.HTTPResponse.Header.Get("Retry-After"))
	require.NoError(t, err)
	require.True(t, retry >= 1 && retry <= 60, "Retry-After %d", retry)
	require.Equal(t, http.StatusTooManyRequests, accept("the members password", "198.51.100.66").StatusCode(), "the guessing client stays refused, even with the right password")

	// A distributed guess: five attempts are counted against the invitation so
	// far; three more clients fit under the ceiling of 8, the fourth does not.
	// (A slow run may let a few more in as the oldest attempts leave the
	// sliding window.)
	var refused *client.AcceptInvitationResponse
	for i := range 10 {
		resp := accept("a guessed password", "192.0.2."+strconv.Itoa(10+i))
		if resp.StatusCode() == http.StatusTooManyRequests {
			refused = resp
			break
		}
		require.Equal(t, http.StatusAccepted, resp.StatusCode(), "client %d", i)
	}
	require.NotNil(t, refused, "the invitation's ceiling stops a guess spread over many clients")
	require.NotEmpty(t, refused.HTTPResponse.Header.Get("Retry-After"))
	var accepted int
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), "SELECT count(*) FROM invitation WHERE accepted_at IS NOT NULL").Scan(&accepted))
	require.Zero(t, accepted)
}

// TestAcceptFromAnotherClientSucceeds: one client's failures do not hold back
// the invitee, who accepts from another client address.
func TestAcceptFromAnotherClientSucceeds(t *testing.T) {
	t.Parallel()
	b := setup(t, trustLoopback, func(c *config.Config) {
		c.Limits.InvitationAcceptPerInvitationPerClientPerMinute = 3
	})
	m := testfactory.AddMember(t, b.h.App.Pool, b.admin.OrganizationID, b.admin.WorkspaceID, testfactory.MemberOpts{Password: "the members password"})
	token := b.keepToken(t, b.inviteOrganization(t, m.Email, "admin").InvitationUrl)
	accept := func(pw, addr string) int {
		resp, err := b.h.API.AcceptInvitationWithResponse(t.Context(), client.AcceptInvitationRequest{Token: token, Password: &pw}, from(addr))
		require.NoError(t, err)
		return resp.StatusCode()
	}
	for range 3 {
		require.Equal(t, http.StatusAccepted, accept("a guessed password", "198.51.100.66"))
	}
	require.Equal(t, http.StatusTooManyRequests, accept("a guessed password", "198.51.100.66"))
	require.Equal(t, http.StatusOK, accept("the members password", "203.0.113.10"))
}

// TestAcceptAnswersDoNotTellAccounts: the inviter holds the token, so the
// answers to an acceptance without a usable password are the same for an
// address with an account and one without: same status, code, message and
// fields.
func TestAcceptAnswersDoNotTellAccounts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := testfactory.AddMember(t, b.h.App.Pool, b.admin.OrganizationID, b.admin.WorkspaceID, testfactory.MemberOpts{Password: "the members password"})
	existing := b.keepToken(t, b.inviteOrganization(t, m.Email, "admin").InvitationUrl)
	fresh := b.keepToken(t, b.inviteOrganization(t, "nobody.yet@example.com", "admin").InvitationUrl)
	for _, pw := range []*string{nil, ptr(""), ptr("short")} {
		a := b.accept(t, client.AcceptInvitationRequest{Token: existing, Password: pw})
		c := b.accept(t, client.AcceptInvitationRequest{Token: fresh, Password: pw})
		require.Equal(t, http.StatusBadRequest, a.StatusCode(), string(a.Body))
		require.Equal(t, a.StatusCode(), c.StatusCode())
		require.Equal(t, decodeError(t, a.Body), decodeError(t, c.Body))
		require.Equal(t, a.HTTPResponse.Header.Get("Content-Type"), c.HTTPResponse.Header.Get("Content-Type"))
	}

	// A password: the token's holder gets the same bytes whether or not the
	// address has an account, and creates no account for the new address.
	a := b.accept(t, client.AcceptInvitationRequest{Token: existing, Password: ptr("a random guess 123")})
	c := b.accept(t, client.AcceptInvitationRequest{Token: fresh, Password: ptr("a random guess 123")})
	requireConfirmationSent(t, a.StatusCode(), a.Body)
	require.Equal(t, a.StatusCode(), c.StatusCode())
	require.Equal(t, string(a.Body), string(c.Body))
	for _, h := range []string{"Content-Type", "Content-Length", "Retry-After", "Location", "Cache-Control"} {
		require.Equal(t, a.HTTPResponse.Header.Values(h), c.HTTPResponse.Header.Values(h), h)
	}
	var accounts, accepted int
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT count(*) FROM user_account WHERE email = 'nobody.yet@example.com'`).Scan(&accounts))
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT count(*) FROM invitation WHERE accepted_at IS NOT NULL`).Scan(&accepted))
	require.Zero(t, accounts, "the token alone creates no account")
	require.Zero(t, accepted)
	var hash string
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT password_hash FROM user_account WHERE id = $1`, m.UserID).Scan(&hash))
	ok, err := password.Verify("the members password", hash)
	require.NoError(t, err)
	require.True(t, ok, "the existing account is not changed")

	// Each address got its mail: a confirmation link for the new one, a notice
	// for the account.
	require.Equal(t, invitation.AttemptMailTemplate, b.mailsTo(t, m.Email)[0].Payload.Template)
	require.Equal(t, invitation.ConfirmationMailTemplate, b.mailsTo(t, "nobody.yet@example.com")[0].Payload.Template)

	// The account's owner with the right password is accepted at once.
	own := b.accept(t, client.AcceptInvitationRequest{Token: existing, Password: ptr("the members password")})
	require.Equal(t, http.StatusOK, own.StatusCode(), string(own.Body))
	require.Equal(t, m.UserID, own.JSON200.UserId)
}

// TestConfirmationLinkExpiresAndIsSwept: a confirmation link past
// auth.invitation_confirmation_ttl_seconds creates nothing, and
// expire_credentials deletes it.
func TestConfirmationLinkExpiresAndIsSwept(t *testing.T) {
	t.Parallel()
	b := setup(t)
	token := b.keepToken(t, b.inviteWorkspace(t, "late@example.com", "viewer").InvitationUrl)
	resp := b.accept(t, client.AcceptInvitationRequest{Token: token, Password: ptr("a long enough secret")})
	requireConfirmationSent(t, resp.StatusCode(), resp.Body)
	mails := b.mailsTo(t, "late@example.com")
	require.Len(t, mails, 1)
	var expires time.Time
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT expires_at FROM invitation_confirmation`).Scan(&expires))
	require.WithinDuration(t, time.Now().Add(time.Hour), expires, time.Minute, "the default TTL is an hour")
	require.WithinDuration(t, expires, mails[0].Payload.ExpiresAt, time.Second, "the mail says when the link stops working")

	b.exec(t, `UPDATE invitation_confirmation SET expires_at = now() - interval '1 second'`)
	status, _ := b.followLink(t, mails[0].Link)
	require.Equal(t, http.StatusGone, status)
	var accounts int
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT count(*) FROM user_account WHERE email = 'late@example.com'`).Scan(&accounts))
	require.Zero(t, accounts)

	res, err := credexpiry.Expire(t.Context(), b.h.App.Pool)
	require.NoError(t, err)
	require.EqualValues(t, 1, res.InvitationConfirmations)
	status, _ = b.followLink(t, mails[0].Link)
	require.Equal(t, http.StatusBadRequest, status, "the swept link is unknown")

	// Accepting again mails a new link that works.
	resp = b.accept(t, client.AcceptInvitationRequest{Token: token, Password: ptr("a long enough secret")})
	requireConfirmationSent(t, resp.StatusCode(), resp.Body)
	mails = b.mailsTo(t, "late@example.com")
	require.Len(t, mails, 2)
	status, _ = b.followLink(t, mails[1].Link)
	require.Equal(t, http.StatusSeeOther, status)
}
