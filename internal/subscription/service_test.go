package subscription_test

import (
	"encoding/base64"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/subscription"
	"github.com/svcdev/svc/internal/testdb"
	"github.com/svcdev/svc/internal/testfactory"
	"github.com/svcdev/svc/internal/webhook"
)

// hook is a public address: the default endpoint policy accepts it without
// resolving anything.
const hook = "https://93.184.216.34/hook"

type testBundle struct {
	pool   *pgxpool.Pool
	ring   *keyring.Ring
	svc    *subscription.Service
	admin  *auth.Caller
	editor *auth.Caller
	// stranger is an admin of another workspace of the organization.
	stranger *auth.Caller
}

func newRing(t *testing.T) *keyring.Ring {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ring.json")
	require.NoError(t, keyring.Generate(path))
	ring, err := keyring.Load(path)
	require.NoError(t, err)
	return ring
}

func setup(t *testing.T, opts ...subscription.Option) *testBundle {
	t.Helper()
	pool := testdb.New(t)
	admin := testfactory.Bootstrap(t, pool)
	ring := newRing(t)
	stranger := admin.Caller(auth.RoleAdmin)
	stranger.WorkspaceID = testfactory.Workspace(t, pool, admin.OrganizationID, admin.PrincipalID, nil).ID
	return &testBundle{pool: pool, ring: ring, svc: subscription.NewService(pool, ring, &endpoint.Policy{}, opts...),
		admin: admin.Caller(auth.RoleAdmin), editor: admin.Caller(auth.RoleEditor), stranger: stranger}
}

func (b *testBundle) create(t *testing.T, c *auth.Caller, types ...string) subscription.WithSecret {
	t.Helper()
	s, err := b.svc.Create(t.Context(), c, subscription.CreateInput{URL: hook, EventTypes: types})
	require.NoError(t, err)
	return s
}

func (b *testBundle) auditActions(t *testing.T, subjectID string) []string {
	t.Helper()
	rows, err := b.pool.Query(t.Context(), `SELECT action FROM audit_event WHERE subject_id = $1 ORDER BY created_at, id`, subjectID)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

func requireRefused(t *testing.T, err error, kind apperr.Kind, field string) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, kind, apperr.KindOf(err), "%v", err)
	if field == "" {
		return
	}
	e, _ := apperr.As(err)
	var fields []string
	for _, d := range e.Details {
		fields = append(fields, d.Field)
	}
	require.Contains(t, fields, field)
}

func ptr[T any](v T) *T { return &v }

func TestService(t *testing.T) {
	t.Parallel()

	t.Run("CreateShowsTheSecretOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		got, err := b.svc.Create(t.Context(), b.admin, subscription.CreateInput{URL: hook,
			EventTypes: []string{"run.failed", "agent.revision_published"}, Description: "ops"})
		require.NoError(t, err)
		s := got.Subscription
		require.Equal(t, []string{"agent.revision_published", "run.failed"}, s.EventTypes, "sorted")
		require.True(t, s.Enabled)
		require.EqualValues(t, 1, s.Version)
		require.Equal(t, "ops", s.Description)

		require.True(t, strings.HasPrefix(got.Secret, subscription.SecretPrefix))
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(got.Secret, subscription.SecretPrefix))
		require.NoError(t, err)
		require.Len(t, key, 32)
		other := b.create(t, b.admin, "run.failed")
		require.NotEqual(t, got.Secret, other.Secret)

		opened, err := b.svc.OpenSecret(t.Context(), b.admin.WorkspaceID, s.ID)
		require.NoError(t, err)
		require.Equal(t, got.Secret, opened)
		var stored []byte
		require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT secret FROM subscription WHERE id = $1`, s.ID).Scan(&stored))
		require.NotContains(t, string(stored), strings.TrimPrefix(got.Secret, subscription.SecretPrefix), "stored sealed")
		require.Equal(t, []string{"subscription.created"}, b.auditActions(t, s.ID))
	})

	t.Run("CreateRefusesBadInput", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		for _, tc := range []struct {
			name   string
			caller *auth.Caller
			in     subscription.CreateInput
			kind   apperr.Kind
			field  string
		}{
			{"an editor", b.editor, subscription.CreateInput{URL: hook, EventTypes: []string{"run.failed"}}, apperr.KindPermissionDenied, ""},
			{"no event types", nil, subscription.CreateInput{URL: hook}, apperr.KindInvalidArgument, "event_types"},
			{"an unknown event type", nil, subscription.CreateInput{URL: hook, EventTypes: []string{"run.failed", "run.exploded"}}, apperr.KindInvalidArgument, "event_types"},
			{"an event type twice", nil, subscription.CreateInput{URL: hook, EventTypes: []string{"run.failed", "run.failed"}}, apperr.KindInvalidArgument, "event_types"},
			{"plain http", nil, subscription.CreateInput{URL: "http://93.184.216.34/hook", EventTypes: []string{"run.failed"}}, apperr.KindInvalidArgument, "url"},
			{"a private address", nil, subscription.CreateInput{URL: "https://10.0.0.1/hook", EventTypes: []string{"run.failed"}}, apperr.KindInvalidArgument, "url"},
			{"a long description", nil, subscription.CreateInput{URL: hook, EventTypes: []string{"run.failed"}, Description: strings.Repeat("x", 2001)}, apperr.KindInvalidArgument, "description"},
		} {
			c := tc.caller
			if c == nil {
				c = b.admin
			}
			_, err := b.svc.Create(t.Context(), c, tc.in)
			requireRefused(t, err, tc.kind, tc.field)
		}
		page, err := b.svc.List(t.Context(), b.admin, nil, nil)
		require.NoError(t, err)
		require.Empty(t, page.Items)
	})

	t.Run("CreateStopsAtTheWorkspaceMaximum", func(t *testing.T) {
		t.Parallel()
		b := setup(t, subscription.WithMaxPerWorkspace(2))
		first := b.create(t, b.admin, "run.failed")
		b.create(t, b.admin, "run.failed")
		_, err := b.svc.Create(t.Context(), b.admin, subscription.CreateInput{URL: hook, EventTypes: []string{"run.failed"}})
		requireRefused(t, err, apperr.KindConflict, "")
		require.ErrorContains(t, err, "limits.subscriptions_per_workspace allows (2)")

		b.create(t, b.stranger, "run.failed") // another workspace counts its own
		require.NoError(t, b.svc.Delete(t.Context(), b.admin, first.Subscription.ID, ptr("*")))
		b.create(t, b.admin, "run.failed")
	})

	t.Run("UpdateChangesOnlyWhatDiffers", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		s := b.create(t, b.admin, "run.failed", "run.succeeded").Subscription

		_, err := b.svc.Update(ctx, b.admin, subscription.UpdateInput{ID: s.ID, Enabled: ptr(false)})
		requireRefused(t, err, apperr.KindPreconditionRequired, "")
		_, err = b.svc.Update(ctx, b.admin, subscription.UpdateInput{ID: s.ID, IfMatch: ptr(`"` + s.ID + `:7"`), Enabled: ptr(false)})
		requireRefused(t, err, apperr.KindPreconditionFailed, "")
		_, err = b.svc.Update(ctx, b.admin, subscription.UpdateInput{ID: s.ID, IfMatch: ptr("*"), URL: ptr("https://127.0.0.1/hook")})
		requireRefused(t, err, apperr.KindInvalidArgument, "url")
		_, err = b.svc.Update(ctx, b.admin, subscription.UpdateInput{ID: s.ID, IfMatch: ptr("*"), EventTypes: []string{}})
		requireRefused(t, err, apperr.KindInvalidArgument, "event_types")
		_, err = b.svc.Update(ctx, b.stranger, subscription.UpdateInput{ID: s.ID, IfMatch: ptr("*"), Enabled: ptr(false)})
		requireRefused(t, err, apperr.KindNotFound, "")

		same, err := b.svc.Update(ctx, b.admin, subscription.UpdateInput{ID: s.ID, IfMatch: ptr(s.ETag()), URL: ptr(hook),
			EventTypes: []string{"run.succeeded", "run.failed"}, Enabled: ptr(true), Description: ptr("")})
		require.NoError(t, err)
		require.EqualValues(t, 1, same.Version, "the same values in another order change nothing")

		got, err := b.svc.Update(ctx, b.admin, subscription.UpdateInput{ID: s.ID, IfMatch: ptr(s.ETag()),
			EventTypes: []string{"thread.idle"}, Enabled: ptr(false), URL: ptr("https://93.184.216.34/v2")})
		require.NoError(t, err)
		require.EqualValues(t, 2, got.Version)
		require.Equal(t, []string{"thread.idle"}, got.EventTypes)
		require.False(t, got.Enabled)
		require.Equal(t, "https://93.184.216.34/v2", got.URL)
		read, err := b.svc.Get(ctx, b.admin, s.ID)
		require.NoError(t, err)
		require.Equal(t, got, read)
		require.Equal(t, []string{"subscription.created", "subscription.updated"}, b.auditActions(t, s.ID))
	})

	t.Run("RotateSecretReplacesIt", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		created := b.create(t, b.admin, "run.failed")
		s := created.Subscription

		_, err := b.svc.RotateSecret(ctx, b.admin, s.ID, nil)
		requireRefused(t, err, apperr.KindPreconditionRequired, "")
		_, err = b.svc.RotateSecret(ctx, b.editor, s.ID, ptr("*"))
		requireRefused(t, err, apperr.KindPermissionDenied, "")
		rotated, err := b.svc.RotateSecret(ctx, b.admin, s.ID, ptr(s.ETag()))
		require.NoError(t, err)
		require.NotEqual(t, created.Secret, rotated.Secret)
		require.True(t, strings.HasPrefix(rotated.Secret, subscription.SecretPrefix))
		require.EqualValues(t, 2, rotated.Subscription.Version)
		opened, err := b.svc.OpenSecret(ctx, b.admin.WorkspaceID, s.ID)
		require.NoError(t, err)
		require.Equal(t, rotated.Secret, opened, "the old secret signs no more")
		require.Equal(t, []string{"subscription.created", "subscription.secret_rotated"}, b.auditActions(t, s.ID))
	})

	t.Run("DeleteOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		s := b.create(t, b.admin, "run.failed").Subscription

		requireRefused(t, b.svc.Delete(ctx, b.admin, s.ID, ptr(`"`+s.ID+`:2"`)), apperr.KindPreconditionFailed, "")
		requireRefused(t, b.svc.Delete(ctx, b.stranger, s.ID, ptr("*")), apperr.KindNotFound, "")
		require.NoError(t, b.svc.Delete(ctx, b.admin, s.ID, ptr(s.ETag())))
		requireRefused(t, b.svc.Delete(ctx, b.admin, s.ID, ptr("*")), apperr.KindNotFound, "")
		_, err := b.svc.Get(ctx, b.admin, s.ID)
		requireRefused(t, err, apperr.KindNotFound, "")
		_, err = b.svc.OpenSecret(ctx, b.admin.WorkspaceID, s.ID)
		requireRefused(t, err, apperr.KindNotFound, "")
		require.Equal(t, []string{"subscription.created", "subscription.deleted"}, b.auditActions(t, s.ID))
	})

	t.Run("ListPagesNewestFirstInTheWorkspace", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		var want []string
		for range 3 {
			want = append([]string{b.create(t, b.admin, "run.failed").Subscription.ID}, want...)
		}
		b.create(t, b.stranger, "run.failed")
		_, err := b.svc.List(t.Context(), b.editor, nil, nil)
		requireRefused(t, err, apperr.KindPermissionDenied, "")

		var got []string
		var cursor *string
		for pages := 0; ; pages++ {
			require.Less(t, pages, 3)
			page, err := b.svc.List(t.Context(), b.admin, ptr(2), cursor)
			require.NoError(t, err)
			for _, s := range page.Items {
				got = append(got, s.ID)
			}
			if page.NextCursor == nil {
				break
			}
			cursor = page.NextCursor
		}
		require.Equal(t, want, got)
	})

	t.Run("ASecretThatCannotBeOpenedIsNeverGarbage", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		a := b.create(t, b.admin, "run.failed").Subscription
		moved := b.create(t, b.admin, "run.failed").Subscription
		// A secret copied from another row: sealed to the other id. No API
		// writes one; a hand-edited database can.
		_, err := b.pool.Exec(ctx, `UPDATE subscription SET secret = (SELECT secret FROM subscription WHERE id = $1) WHERE id = $2`, a.ID, moved.ID)
		require.NoError(t, err)
		_, err = b.svc.OpenSecret(ctx, b.admin.WorkspaceID, moved.ID)
		require.ErrorIs(t, err, subscription.ErrSecretUnreadable)

		var sealed []byte
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT secret FROM subscription WHERE id = $1`, a.ID).Scan(&sealed))
		_, err = subscription.OpenStoredSecret(newRing(t), a.ID, sealed)
		require.ErrorIs(t, err, subscription.ErrSecretUnreadable, "a ring without the key")
		_, err = subscription.OpenStoredSecret(b.ring, a.ID, sealed)
		require.NoError(t, err)
	})
}

// A subscription can ask for exactly the events svc emits.
func TestEventTypesAreTheEmittedEvents(t *testing.T) {
	t.Parallel()
	emitted := []string{
		webhook.RunAccepted, webhook.RunStarted, webhook.RunSucceeded, webhook.RunFailed, webhook.RunCancelled, webhook.RunWaiting,
		webhook.ThreadIdle, webhook.AgentRevisionPublished, webhook.SkillRevisionPublished, webhook.InvitationAccepted,
		webhook.EnvironmentStopped, webhook.EnvironmentDeleted,
	}
	require.ElementsMatch(t, emitted, subscription.EventTypes)
	require.True(t, slices.IsSorted(subscription.EventTypes))
}
