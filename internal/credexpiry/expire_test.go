package credexpiry

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/testdb"
	"github.com/svcdev/svc/internal/testfactory"
)

type testBundle struct {
	pool  *pgxpool.Pool
	admin testfactory.Admin
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	pool := testdb.New(t)
	return &testBundle{pool: pool, admin: testfactory.Bootstrap(t, pool)}
}

// Ages of rows, as SQL expressions over the database clock. The rows below
// are written directly: expired, used or revoked at a chosen moment is a
// state the services reach only with time.
const (
	past   = "now() - interval '1 second'"
	future = "now() + interval '1 hour'"
)

func (b *testBundle) session(t *testing.T, expires string, revoked bool) string {
	t.Helper()
	sid := id.New(id.Session)
	_, err := b.pool.Exec(t.Context(),
		`INSERT INTO login_session (id, user_id, token_hash, expires_at, revoked_at)
		 VALUES ($1, $2, $3, `+expires+`, CASE WHEN $4::boolean THEN now() END)`,
		sid, b.admin.UserID, []byte(sid), revoked)
	require.NoError(t, err)
	return sid
}

func (b *testBundle) mailLink(t *testing.T, expires string, used, revoked bool) string {
	t.Helper()
	mid := id.New(id.MailLink)
	_, err := b.pool.Exec(t.Context(),
		`INSERT INTO mail_link (id, user_id, purpose, token_hash, expires_at, used_at, revoked_at)
		 VALUES ($1, $2, 'password_reset', $3, `+expires+`, CASE WHEN $4::boolean THEN now() END, CASE WHEN $5::boolean THEN now() END)`,
		mid, b.admin.UserID, []byte(mid), used, revoked)
	require.NoError(t, err)
	return mid
}

// invitation inserts an invitation to a distinct address (the pending index
// allows one pending invitation per address).
func (b *testBundle) invitation(t *testing.T, expires string, accepted, revoked bool) string {
	t.Helper()
	iid := id.New(id.Invitation)
	_, err := b.pool.Exec(t.Context(),
		`INSERT INTO invitation (id, organization_id, workspace_id, email, role, invited_by_id, token_hash, expires_at, accepted_at, revoked_at)
		 VALUES ($1, $2, $3, $1 || '@example.com', 'viewer', $4, $5, `+expires+`, CASE WHEN $6::boolean THEN now() END, CASE WHEN $7::boolean THEN now() END)`,
		iid, b.admin.OrganizationID, b.admin.WorkspaceID, b.admin.PrincipalID, []byte(iid), accepted, revoked)
	require.NoError(t, err)
	return iid
}

// confirmation inserts a pending acceptance of a new pending invitation.
func (b *testBundle) confirmation(t *testing.T, expires string) string {
	t.Helper()
	iid := b.invitation(t, future, false, false)
	cid := id.New(id.MailLink)
	_, err := b.pool.Exec(t.Context(),
		`INSERT INTO invitation_confirmation (id, invitation_id, token_hash, password_hash, display_name, expires_at)
		 VALUES ($1, $2, $3, 'hash', '', `+expires+`)`,
		cid, iid, []byte(cid))
	require.NoError(t, err)
	return cid
}

// remaining returns the ids left in a table.
func (b *testBundle) remaining(t *testing.T, table string) []string {
	t.Helper()
	rows, err := b.pool.Query(t.Context(), "SELECT id FROM "+table+" ORDER BY id")
	require.NoError(t, err)
	var ids []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		ids = append(ids, s)
	}
	require.NoError(t, rows.Err())
	return ids
}

func TestExpire(t *testing.T) {
	t.Parallel()

	t.Run("DeletesExactlyTheDeadCredentialsInBatches", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		const batch = 3

		// batch+1 expired sessions and a revoked one: three batches (3, 2).
		liveSessions := []string{b.session(t, future, false), b.session(t, future, false)}
		for range batch + 1 {
			b.session(t, past, false)
		}
		b.session(t, future, true)

		liveLinks := []string{b.mailLink(t, future, false, false)}
		for range batch {
			b.mailLink(t, past, false, false)
		}
		b.mailLink(t, future, true, false)
		b.mailLink(t, future, false, true)

		liveConfirmations := []string{b.confirmation(t, future)}
		for range batch + 1 {
			b.confirmation(t, past)
		}

		kept := []string{
			b.invitation(t, future, false, false), // pending
			b.invitation(t, past, true, false),    // accepted, then past its expiry: kept
			b.invitation(t, future, true, false),  // accepted
		}
		for range batch + 1 {
			b.invitation(t, past, false, false) // expired, never accepted
		}
		b.invitation(t, future, false, true) // revoked

		res, err := expire(t.Context(), b.pool, batch)
		require.NoError(t, err)
		require.Equal(t, Result{LoginSessions: batch + 2, MailLinks: batch + 2, InvitationConfirmations: batch + 1, Invitations: batch + 2}, res)

		require.ElementsMatch(t, liveSessions, b.remaining(t, "login_session"))
		require.ElementsMatch(t, liveLinks, b.remaining(t, "mail_link"))
		require.ElementsMatch(t, liveConfirmations, b.remaining(t, "invitation_confirmation"))
		// The confirmations' own invitations are pending and stay.
		require.Subset(t, b.remaining(t, "invitation"), kept)
		require.Len(t, b.remaining(t, "invitation"), len(kept)+len(liveConfirmations)+batch+1)

		// A second pass finds nothing more.
		res, err = expire(t.Context(), b.pool, batch)
		require.NoError(t, err)
		require.Equal(t, Result{}, res)
	})

	t.Run("ExactMultipleOfTheBatchIsDrained", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		for range 4 {
			b.session(t, past, false)
		}
		res, err := expire(t.Context(), b.pool, 2)
		require.NoError(t, err)
		require.EqualValues(t, 4, res.LoginSessions)
		require.Empty(t, b.remaining(t, "login_session"))
	})

	t.Run("DefaultBatch", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		live := b.session(t, future, false)
		b.session(t, past, false)
		res, err := Expire(t.Context(), b.pool)
		require.NoError(t, err)
		require.EqualValues(t, 1, res.LoginSessions)
		require.Equal(t, []string{live}, b.remaining(t, "login_session"))
	})

	t.Run("StopsWhenTheContextEnds", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.session(t, past, false)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := expire(ctx, b.pool, 1)
		require.ErrorIs(t, err, context.Canceled)
		require.Len(t, b.remaining(t, "login_session"), 1)
	})
}
