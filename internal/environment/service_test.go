package environment_test

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/environment"
	"github.com/svcdev/svc/internal/testdb"
	"github.com/svcdev/svc/internal/testfactory"
)

type serviceBundle struct {
	pool   *pgxpool.Pool
	svc    *environment.Service
	admin  testfactory.Admin
	editor *auth.Caller
	// Two templates of the workspace, and one of another workspace.
	tplA, tplB, theirs string
	stranger           testfactory.Owner
}

func setupService(t *testing.T) *serviceBundle {
	t.Helper()
	pool := testdb.New(t)
	admin := testfactory.Bootstrap(t, pool)
	stranger := testfactory.Owner{
		WorkspaceID: testfactory.Workspace(t, pool, admin.OrganizationID, admin.PrincipalID, nil).ID,
		PrincipalID: admin.PrincipalID,
	}
	return &serviceBundle{
		pool: pool, svc: environment.NewService(pool), admin: admin, editor: admin.Caller(auth.RoleEditor),
		tplA:     testfactory.EnvironmentTemplate(t, pool, admin.Owner(), nil).ID,
		tplB:     testfactory.EnvironmentTemplate(t, pool, admin.Owner(), nil).ID,
		theirs:   testfactory.EnvironmentTemplate(t, pool, stranger, nil).ID,
		stranger: stranger,
	}
}

// env writes an environment of the workspace in status, as a run and the
// sweep would have left it: runs make environments, the API does not.
func (b *serviceBundle) env(t *testing.T, templateID, status string) string {
	t.Helper()
	return testfactory.Environment(t, b.pool, b.admin.Owner(), &testfactory.EnvironmentOpts{TemplateID: templateID, Status: status}).ID
}

func (b *serviceBundle) ids(t *testing.T, in environment.ListInput) []string {
	t.Helper()
	page, err := b.svc.List(t.Context(), b.admin.Caller(auth.RoleViewer), in)
	require.NoError(t, err)
	var out []string
	for _, e := range page.Items {
		out = append(out, e.ID)
	}
	return out
}

func (b *serviceBundle) auditActions(t *testing.T, subjectID string) []string {
	t.Helper()
	rows, err := b.pool.Query(t.Context(), `SELECT action FROM audit_event WHERE subject_id = $1 ORDER BY created_at, id`, subjectID)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

func ptr[T any](v T) *T { return &v }

func TestService(t *testing.T) {
	t.Parallel()

	t.Run("ListIsNewestFirstInEveryStatus", func(t *testing.T) {
		t.Parallel()
		b := setupService(t)
		e1 := b.env(t, b.tplA, "running")
		e2 := b.env(t, b.tplB, "stopped")
		e3 := b.env(t, b.tplA, "deleted")
		testfactory.Environment(t, b.pool, b.stranger, &testfactory.EnvironmentOpts{TemplateID: b.theirs})

		require.Equal(t, []string{e3, e2, e1}, b.ids(t, environment.ListInput{}))
		require.Equal(t, []string{e3, e1}, b.ids(t, environment.ListInput{TemplateID: &b.tplA}))
		require.Empty(t, b.ids(t, environment.ListInput{TemplateID: &b.theirs}), "another workspace's template lists nothing")
		require.Empty(t, b.ids(t, environment.ListInput{TemplateID: ptr("et_01jd5v6w1q3yb8j8y3tn9z2k7h")}))

		first, err := b.svc.List(t.Context(), b.editor, environment.ListInput{Limit: ptr(2)})
		require.NoError(t, err)
		require.Len(t, first.Items, 2)
		require.NotNil(t, first.NextCursor)
		require.Equal(t, []string{e1}, b.ids(t, environment.ListInput{Limit: ptr(2), Cursor: first.NextCursor}))
		_, err = b.svc.List(t.Context(), b.editor, environment.ListInput{Cursor: ptr("!")})
		require.Equal(t, apperr.KindInvalidArgument, apperr.KindOf(err))
	})

	t.Run("GetReadsOnlyTheWorkspacesOwn", func(t *testing.T) {
		t.Parallel()
		b := setupService(t)
		mine := b.env(t, b.tplA, "running")
		theirs := testfactory.Environment(t, b.pool, b.stranger, &testfactory.EnvironmentOpts{TemplateID: b.theirs}).ID

		got, err := b.svc.Get(t.Context(), b.admin.Caller(auth.RoleViewer), mine)
		require.NoError(t, err)
		require.Equal(t, environment.StatusRunning, got.Status)
		require.Equal(t, b.tplA, got.TemplateID)
		require.Equal(t, `"`+mine+`:1"`, got.ETag())
		_, err = b.svc.Get(t.Context(), b.editor, theirs)
		require.Equal(t, apperr.KindNotFound, apperr.KindOf(err))
	})

	t.Run("DeleteAsksTheSweepOnce", func(t *testing.T) {
		t.Parallel()
		b := setupService(t)
		ctx := t.Context()
		running := b.env(t, b.tplA, "running")

		require.Equal(t, apperr.KindPermissionDenied, apperr.KindOf(b.svc.Delete(ctx, b.admin.Caller(auth.RoleViewer), running, ptr("*"))))
		require.Equal(t, apperr.KindPreconditionRequired, apperr.KindOf(b.svc.Delete(ctx, b.editor, running, nil)))
		require.Equal(t, apperr.KindPreconditionFailed, apperr.KindOf(b.svc.Delete(ctx, b.editor, running, ptr(`"`+running+`:9"`))))
		require.NoError(t, b.svc.Delete(ctx, b.editor, running, ptr(`"`+running+`:1"`)))
		got, err := b.svc.Get(ctx, b.editor, running)
		require.NoError(t, err)
		require.Equal(t, environment.StatusDeleting, got.Status, "the sweep destroys it")
		require.EqualValues(t, 2, got.Version)

		// Asked again, or of one already gone: done, and nothing changes.
		require.NoError(t, b.svc.Delete(ctx, b.editor, running, ptr(got.ETag())))
		deleted := b.env(t, b.tplA, "deleted")
		require.NoError(t, b.svc.Delete(ctx, b.editor, deleted, ptr("*")))
		for envID, version := range map[string]int32{running: 2, deleted: 1} {
			got, err := b.svc.Get(ctx, b.editor, envID)
			require.NoError(t, err)
			require.Equal(t, version, got.Version)
		}
		require.Equal(t, []string{"environment.deleted"}, b.auditActions(t, running))
		require.Empty(t, b.auditActions(t, deleted))

		theirs := testfactory.Environment(t, b.pool, b.stranger, &testfactory.EnvironmentOpts{TemplateID: b.theirs}).ID
		require.Equal(t, apperr.KindNotFound, apperr.KindOf(b.svc.Delete(ctx, b.editor, theirs, ptr("*"))))
	})
}
