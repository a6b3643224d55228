package invitation_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/client"
	"github.com/svcdev/svc/internal/invitation"
	"github.com/svcdev/svc/internal/password"
	"github.com/svcdev/svc/internal/testfactory"
)

func TestAcceptCreatesTheAccount(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created := b.inviteWorkspace(t, "Ada@Example.com", "editor")
	token := b.keepToken(t, created.InvitationUrl)

	// Without a password a new address cannot get an account; the invitation stays usable.
	resp := b.accept(t, client.AcceptInvitationRequest{Token: token})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode())
	require.Contains(t, decodeError(t, resp.Body).Fields, "password")
	resp = b.accept(t, client.AcceptInvitationRequest{Token: token, Password: ptr("short")})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode())
	require.Contains(t, decodeError(t, resp.Body).Fields, "password")

	// The token alone creates no account: a link goes to the address, and
	// following it creates the account with the password given here.
	resp = b.accept(t, client.AcceptInvitationRequest{Token: token, Password: ptr("a long enough secret"), DisplayName: ptr("Ada Lovelace")})
	requireConfirmationSent(t, resp.StatusCode(), resp.Body)
	var accounts int
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT count(*) FROM user_account WHERE lower(email) = 'ada@example.com'`).Scan(&accounts))
	require.Zero(t, accounts)
	mails := b.mailsTo(t, "Ada@Example.com")
	require.Len(t, mails, 1)
	require.Equal(t, invitation.ConfirmationMailTemplate, mails[0].Payload.Template)
	require.Equal(t, created.Invitation.Id, mails[0].Payload.InvitationID)
	require.True(t, strings.HasPrefix(mails[0].Link, "https://svc.example.com/invitations/confirm?token="), mails[0].Link)
	status, location := b.followLink(t, mails[0].Link)
	require.Equal(t, http.StatusSeeOther, status)
	require.Equal(t, "/sign-in?notice=invitation_accepted", location)
	status, _ = b.followLink(t, mails[0].Link)
	require.Equal(t, http.StatusBadRequest, status, "the link works once")

	got := struct{ UserId, PrincipalId string }{}
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT id, principal_id FROM user_account WHERE lower(email) = 'ada@example.com'`).Scan(&got.UserId, &got.PrincipalId))
	inv, err := b.api.GetInvitationWithResponse(t.Context(), created.Invitation.Id)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, inv.StatusCode(), string(inv.Body))
	require.Equal(t, got.PrincipalId, inv.JSON200.PrincipalId.MustGet())
	require.False(t, inv.JSON200.AcceptedAt.IsNull())
	require.True(t, inv.JSON200.RevokedAt.IsNull())
	require.Equal(t, 2, inv.JSON200.Version)

	// A working account: the password verifies, the principal is named, the membership exists.
	var email, hash, name, role string
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `
		SELECT u.email, u.password_hash, p.display_name, wm.role
		FROM user_account u JOIN principal p ON p.id = u.principal_id
		JOIN workspace_member wm ON wm.principal_id = p.id AND wm.workspace_id = $2
		WHERE u.id = $1 AND p.id = $3 AND p.kind = 'user' AND u.disabled_at IS NULL`,
		got.UserId, b.admin.WorkspaceID, got.PrincipalId).Scan(&email, &hash, &name, &role))
	require.Equal(t, "Ada@Example.com", email)
	require.Equal(t, "Ada Lovelace", name)
	require.Equal(t, "editor", role)
	ok, err := password.Verify("a long enough secret", hash)
	require.NoError(t, err)
	require.True(t, ok)

	var actions []string
	rows, err := b.h.App.Pool.Query(t.Context(), "SELECT action FROM audit_event WHERE actor_id = $1 ORDER BY action", got.PrincipalId)
	require.NoError(t, err)
	for rows.Next() {
		var a string
		require.NoError(t, rows.Scan(&a))
		actions = append(actions, a)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"invitation.accepted", "member.created", "user.created"}, actions)

	// The token is spent.
	resp = b.accept(t, client.AcceptInvitationRequest{Token: token, Password: ptr("a long enough secret")})
	require.Equal(t, http.StatusConflict, resp.StatusCode())
	e := decodeError(t, resp.Body)
	require.Equal(t, "conflict", e.Code)
	require.Contains(t, e.Message, "already accepted")
}

func TestAcceptWithAnExistingAccount(t *testing.T) {
	t.Parallel()

	t.Run("GainsTheOrganizationRoleAtOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		m := testfactory.AddMember(t, b.h.App.Pool, b.admin.OrganizationID, b.admin.WorkspaceID, testfactory.MemberOpts{WorkspaceRole: "viewer", Password: "the members password"})
		me := b.h.Client(t, m.Token)
		before, err := me.GetMeWithResponse(t.Context()) // fills the key cache
		require.NoError(t, err)
		require.True(t, before.JSON200.OrganizationRole.IsNull())

		created := b.inviteOrganization(t, m.Email, "admin")
		token := b.keepToken(t, created.InvitationUrl)
		// The token proves access to the invitation, not to the account: an
		// existing account joins only with its own password. Another password
		// is answered as for a new address, and the account is told.
		resp := b.accept(t, client.AcceptInvitationRequest{Token: token})
		require.Equal(t, http.StatusBadRequest, resp.StatusCode(), string(resp.Body))
		require.Equal(t, []string{"password"}, decodeError(t, resp.Body).Fields)
		resp = b.accept(t, client.AcceptInvitationRequest{Token: token, Password: ptr("not the members password")})
		requireConfirmationSent(t, resp.StatusCode(), resp.Body)
		mails := b.mailsTo(t, m.Email)
		require.Len(t, mails, 1)
		require.Equal(t, invitation.AttemptMailTemplate, mails[0].Payload.Template)
		require.Equal(t, publicURL+"invitations/accept?token="+token, mails[0].Link, "the mail leads to the invitation, not to a link that accepts")
		resp = b.accept(t, client.AcceptInvitationRequest{Token: token, Password: ptr("the members password")})
		require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
		require.Equal(t, m.UserID, resp.JSON200.UserId)
		require.Equal(t, m.PrincipalID, resp.JSON200.PrincipalId)

		// The cached key lookup was dropped: the new role applies to the next request.
		after, err := me.GetMeWithResponse(t.Context())
		require.NoError(t, err)
		require.EqualValues(t, "admin", after.JSON200.OrganizationRole.MustGet())
		require.EqualValues(t, "viewer", after.JSON200.Role, "the key's own role still bounds it")
	})

	t.Run("AlreadyAMemberKeepsTheRole", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		m := testfactory.AddMember(t, b.h.App.Pool, b.admin.OrganizationID, b.admin.WorkspaceID, testfactory.MemberOpts{Password: "the members password"})
		created := b.inviteWorkspace(t, m.Email, "editor")
		// The address became a member some other way before accepting.
		testfactory.JoinWorkspace(t, b.h.App.Pool, b.admin.WorkspaceID, m.PrincipalID, "runner")

		resp := b.accept(t, client.AcceptInvitationRequest{Token: b.keepToken(t, created.InvitationUrl), Password: ptr("the members password")})
		require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
		require.False(t, resp.JSON200.Invitation.AcceptedAt.IsNull())
		var role string
		require.NoError(t, b.h.App.Pool.QueryRow(t.Context(),
			"SELECT role FROM workspace_member WHERE workspace_id = $1 AND principal_id = $2", b.admin.WorkspaceID, m.PrincipalID).Scan(&role))
		require.Equal(t, "runner", role)
	})

	t.Run("DisabledAccountIsRefused", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		m := testfactory.AddMember(t, b.h.App.Pool, b.admin.OrganizationID, b.admin.WorkspaceID, testfactory.MemberOpts{Password: "the members password"})
		created := b.inviteWorkspace(t, m.Email, "viewer")
		b.exec(t, "UPDATE user_account SET disabled_at = now() WHERE id = $1", m.UserID)

		resp := b.accept(t, client.AcceptInvitationRequest{Token: b.keepToken(t, created.InvitationUrl), Password: ptr("the members password")})
		require.Equal(t, http.StatusConflict, resp.StatusCode())
		e := decodeError(t, resp.Body)
		require.Equal(t, "conflict", e.Code)
		require.Contains(t, e.Message, "disabled")
		var n int
		require.NoError(t, b.h.App.Pool.QueryRow(t.Context(),
			"SELECT count(*) FROM workspace_member WHERE principal_id = $1", m.PrincipalID).Scan(&n))
		require.Zero(t, n)
	})
}

func TestAcceptRefusesUnusableTokens(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := func(token string) client.AcceptInvitationRequest {
		return client.AcceptInvitationRequest{Token: token, Password: ptr("a long enough secret")}
	}

	expired := b.inviteWorkspace(t, "expired@example.com", "viewer")
	b.expire(t, expired.Invitation.Id)
	resp := b.accept(t, body(b.keepToken(t, expired.InvitationUrl)))
	require.Equal(t, http.StatusConflict, resp.StatusCode())
	require.Contains(t, decodeError(t, resp.Body).Message, "expired")

	revoked := b.inviteOrganization(t, "revoked@example.com", "member")
	rev, err := b.api.RevokeInvitationWithResponse(t.Context(), revoked.Invitation.Id, &client.RevokeInvitationParams{IfMatch: "*"})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, rev.StatusCode())
	resp = b.accept(t, body(b.keepToken(t, revoked.InvitationUrl)))
	require.Equal(t, http.StatusConflict, resp.StatusCode())
	require.Contains(t, decodeError(t, resp.Body).Message, "revoked")

	for _, token := range []string{
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", // well formed, unknown
		"not-a-token",
	} {
		resp = b.accept(t, body(token))
		require.Equal(t, http.StatusNotFound, resp.StatusCode(), token)
		e := decodeError(t, resp.Body)
		require.Equal(t, "not_found", e.Code)
		require.Equal(t, "invitation not found", e.Message)
	}

	// Nothing was created for the refused addresses.
	var n int
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(),
		"SELECT count(*) FROM user_account WHERE email IN ('expired@example.com', 'revoked@example.com')").Scan(&n))
	require.Zero(t, n)
}
