package invitation_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/client"
	"github.com/svcdev/svc/internal/config"
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
		require.Equal(t, http.StatusBadRequest, resp.StatusCode(), "attempt %d: %s", i+1, resp.Body)
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
		require.Equal(t, http.StatusBadRequest, resp.StatusCode(), "client %d", i)
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
		require.Equal(t, http.StatusBadRequest, accept("a guessed password", "198.51.100.66"))
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
}
