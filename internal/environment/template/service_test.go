package template_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/environment/template"
	"github.com/svcdev/svc/internal/provider"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/testdb"
	"github.com/svcdev/svc/internal/testfactory"
)

type testBundle struct {
	pool   *pgxpool.Pool
	reg    *catalog.Registry
	svc    *template.Service
	admin  testfactory.Admin
	editor *auth.Caller
	// Providers of the workspace: docker can stop and delete environments,
	// modal only delete them, local neither.
	docker, modal, local, disabled, model string
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	pool := testdb.New(t)
	admin := testfactory.Bootstrap(t, pool)
	reg, err := catalog.New(catalog.Options{LocalEnabled: true})
	require.NoError(t, err)
	env := func(typ string, disabled bool) string {
		return testfactory.Provider(t, pool, admin.Owner(), &testfactory.ProviderOpts{Kind: "environment", Type: typ, Disabled: disabled}).ID
	}
	return &testBundle{
		pool: pool, reg: reg, svc: template.NewService(pool, reg), admin: admin, editor: admin.Caller(auth.RoleEditor),
		docker: env("docker", false), modal: env("modal", false), local: env("local", false), disabled: env("docker", true),
		model: testfactory.Provider(t, pool, admin.Owner(), nil).ID,
	}
}

func (b *testBundle) create(t *testing.T, in template.CreateInput) template.Template {
	t.Helper()
	if in.Name == "" {
		in.Name = "dev"
	}
	tpl, err := b.svc.Create(t.Context(), b.editor, in)
	require.NoError(t, err)
	return tpl
}

func (b *testBundle) audit(t *testing.T, subjectID string) [][]string {
	t.Helper()
	rows, err := b.pool.Query(t.Context(), `SELECT action, changed_fields FROM audit_event WHERE subject_id = $1 ORDER BY created_at, id`, subjectID)
	require.NoError(t, err)
	var out [][]string
	for rows.Next() {
		var action string
		var fields []string
		require.NoError(t, rows.Scan(&action, &fields))
		out = append(out, append([]string{action}, fields...))
	}
	require.NoError(t, rows.Err())
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

var alpine = map[string]any{"image": "alpine:3.21"}

func TestService(t *testing.T) {
	t.Parallel()

	t.Run("CreateOnAnEnvironmentProvider", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		tpl := b.create(t, template.CreateInput{Name: "dev", Description: "Scratch space.", ProviderID: b.docker,
			Config: map[string]any{"image": "alpine:3.21", "cpu": 0.5}, IdleStopSeconds: ptr(600), IdleDeleteSeconds: ptr(3600),
			Labels: map[string]string{"team": "a"}})
		require.Equal(t, b.docker, tpl.ProviderID)
		require.Equal(t, map[string]any{"image": "alpine:3.21", "cpu": 0.5}, tpl.Config)
		require.Equal(t, ptr[int32](600), tpl.IdleStopSeconds)
		require.Equal(t, ptr[int32](3600), tpl.IdleDeleteSeconds)
		require.True(t, tpl.Enabled, "enabled unless asked otherwise")
		require.EqualValues(t, 1, tpl.Version)
		require.Equal(t, `"`+tpl.ID+`:1"`, tpl.ETag())

		got, err := b.svc.Get(t.Context(), b.admin.Caller(auth.RoleViewer), tpl.ID)
		require.NoError(t, err)
		require.Equal(t, tpl, got)
		require.Equal(t, [][]string{{"environment_template.created", "config", "description", "enabled",
			"environment_provider_id", "idle_delete_seconds", "idle_stop_seconds", "labels", "name"}}, b.audit(t, tpl.ID))

		disabled := b.create(t, template.CreateInput{Name: "off", ProviderID: b.local, Enabled: ptr(false)})
		require.False(t, disabled.Enabled)
		require.Equal(t, map[string]any{}, disabled.Config, "no config is the empty object")
	})

	t.Run("CreateRefuses", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		other := testfactory.Workspace(t, b.pool, b.admin.OrganizationID, b.admin.PrincipalID, nil).ID
		theirs := testfactory.Provider(t, b.pool, testfactory.Owner{WorkspaceID: other, PrincipalID: b.admin.PrincipalID},
			&testfactory.ProviderOpts{Kind: "environment", Type: "docker"}).ID
		// The operator's rule on docker templates: no root.
		b.svc.SetConfigCheck("docker", func(cfg map[string]any) error {
			if cfg["user"] == "0" {
				return apperr.InvalidField("config.user", "root is not allowed here")
			}
			return nil
		})
		for _, tc := range []struct {
			name   string
			caller *auth.Caller
			in     template.CreateInput
			kind   apperr.Kind
			field  string
		}{
			{"a viewer", b.admin.Caller(auth.RoleViewer), template.CreateInput{ProviderID: b.docker, Config: alpine}, apperr.KindPermissionDenied, ""},
			{"no provider", nil, template.CreateInput{ProviderID: "prv_01jd5v6w1q3yb8j8y3tn9z2k7h", Config: alpine}, apperr.KindNotFound, "environment_provider_id"},
			{"another workspace's provider", nil, template.CreateInput{ProviderID: theirs, Config: alpine}, apperr.KindNotFound, "environment_provider_id"},
			{"a model provider", nil, template.CreateInput{ProviderID: b.model, Config: alpine}, apperr.KindInvalidArgument, "environment_provider_id"},
			{"a disabled provider", nil, template.CreateInput{ProviderID: b.disabled, Config: alpine}, apperr.KindDisabled, "environment_provider_id"},
			{"a config the type refuses", nil, template.CreateInput{ProviderID: b.docker, Config: map[string]any{"cpu": 1}}, apperr.KindInvalidArgument, ""},
			{"a config the operator refuses", nil, template.CreateInput{ProviderID: b.docker, Config: map[string]any{"image": "alpine", "user": "0"}}, apperr.KindInvalidArgument, "config.user"},
			{"stopping a type that cannot stop", nil, template.CreateInput{ProviderID: b.modal, Config: alpine, IdleStopSeconds: ptr(600)}, apperr.KindInvalidArgument, "idle_stop_seconds"},
			{"deleting a type svc does not manage", nil, template.CreateInput{ProviderID: b.local, IdleDeleteSeconds: ptr(600)}, apperr.KindInvalidArgument, "idle_delete_seconds"},
			{"a threshold under a minute", nil, template.CreateInput{ProviderID: b.docker, Config: alpine, IdleStopSeconds: ptr(59)}, apperr.KindInvalidArgument, "idle_stop_seconds"},
			{"a threshold over a year", nil, template.CreateInput{ProviderID: b.docker, Config: alpine, IdleDeleteSeconds: ptr(template.MaxIdleSeconds + 1)}, apperr.KindInvalidArgument, "idle_delete_seconds"},
			{"deleting before stopping", nil, template.CreateInput{ProviderID: b.docker, Config: alpine, IdleStopSeconds: ptr(600), IdleDeleteSeconds: ptr(300)}, apperr.KindInvalidArgument, "idle_delete_seconds"},
			{"a bad label", nil, template.CreateInput{ProviderID: b.docker, Config: alpine, Labels: map[string]string{"Not A Key": "v"}}, apperr.KindInvalidArgument, ""},
		} {
			c := tc.caller
			if c == nil {
				c = b.editor
			}
			if tc.in.Name == "" {
				tc.in.Name = "dev"
			}
			_, err := b.svc.Create(t.Context(), c, tc.in)
			requireRefused(t, err, tc.kind, tc.field)
		}
		_, err := b.svc.Create(t.Context(), b.editor, template.CreateInput{Name: "", ProviderID: b.docker, Config: alpine})
		requireRefused(t, err, apperr.KindInvalidArgument, "name")
		page, err := b.svc.List(t.Context(), b.editor, template.ListInput{})
		require.NoError(t, err)
		require.Empty(t, page.Items)
	})

	t.Run("UpdateChangesOnlyWhatDiffers", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		tpl := b.create(t, template.CreateInput{ProviderID: b.docker, Config: map[string]any{"image": "alpine:3.21", "cpu": 1.0},
			IdleStopSeconds: ptr(600)})

		_, err := b.svc.Update(ctx, b.editor, template.UpdateInput{ID: tpl.ID, Name: ptr("x")})
		requireRefused(t, err, apperr.KindPreconditionRequired, "")
		_, err = b.svc.Update(ctx, b.editor, template.UpdateInput{ID: tpl.ID, IfMatch: ptr(`"` + tpl.ID + `:2"`), Name: ptr("x")})
		requireRefused(t, err, apperr.KindPreconditionFailed, "")

		// The same config (number spelled otherwise) and the same threshold change nothing.
		same, err := b.svc.Update(ctx, b.editor, template.UpdateInput{ID: tpl.ID, IfMatch: ptr(tpl.ETag()),
			Config: map[string]any{"cpu": 1, "image": "alpine:3.21"}, IdleStopSeconds: provider.Set(600), Name: ptr("dev")})
		require.NoError(t, err)
		require.EqualValues(t, 1, same.Version)

		// A PATCH is judged as the template it leaves: deleting before
		// stopping, or a config the type refuses.
		_, err = b.svc.Update(ctx, b.editor, template.UpdateInput{ID: tpl.ID, IfMatch: ptr("*"), IdleDeleteSeconds: provider.Set(300)})
		requireRefused(t, err, apperr.KindInvalidArgument, "idle_delete_seconds")
		_, err = b.svc.Update(ctx, b.editor, template.UpdateInput{ID: tpl.ID, IfMatch: ptr("*"), Config: map[string]any{"cpu": 2}})
		requireRefused(t, err, apperr.KindInvalidArgument, "")

		got, err := b.svc.Update(ctx, b.editor, template.UpdateInput{ID: tpl.ID, IfMatch: ptr(tpl.ETag()),
			Config: map[string]any{"image": "python:3.13-slim"}, IdleStopSeconds: provider.Remove[int](),
			IdleDeleteSeconds: provider.Set(300), Enabled: ptr(false)})
		require.NoError(t, err)
		require.EqualValues(t, 2, got.Version)
		require.Equal(t, map[string]any{"image": "python:3.13-slim"}, got.Config)
		require.Nil(t, got.IdleStopSeconds)
		require.Equal(t, ptr[int32](300), got.IdleDeleteSeconds)
		require.False(t, got.Enabled)
		require.Equal(t, [][]string{
			{"environment_template.created", "config", "description", "enabled", "environment_provider_id", "idle_stop_seconds", "labels", "name"},
			{"environment_template.updated", "config", "enabled", "idle_delete_seconds", "idle_stop_seconds"},
		}, b.audit(t, tpl.ID))
	})

	t.Run("UpdateOnAProviderNoLongerUsable", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		onDocker := b.create(t, template.CreateInput{ProviderID: b.docker, Config: alpine})
		onLocal := b.create(t, template.CreateInput{Name: "here", ProviderID: b.local})
		_, err := b.pool.Exec(ctx, `UPDATE provider SET enabled = false WHERE id = $1`, b.docker)
		require.NoError(t, err)

		// Editing is not new use: a disabled provider's template still changes.
		got, err := b.svc.Update(ctx, b.editor, template.UpdateInput{ID: onDocker.ID, IfMatch: ptr("*"),
			Config: map[string]any{"image": "busybox"}})
		require.NoError(t, err)
		require.Equal(t, "busybox", got.Config["image"])

		// Without the local type installed its schema is gone: config and
		// thresholds are frozen, the rest still changes.
		reg, err := catalog.New(catalog.Options{})
		require.NoError(t, err)
		without := template.NewService(b.pool, reg)
		_, err = without.Update(ctx, b.editor, template.UpdateInput{ID: onLocal.ID, IfMatch: ptr("*"), Config: map[string]any{"workdir": "/tmp"}})
		requireRefused(t, err, apperr.KindConflict, "")
		renamed, err := without.Update(ctx, b.editor, template.UpdateInput{ID: onLocal.ID, IfMatch: ptr("*"), Name: ptr("there")})
		require.NoError(t, err)
		require.Equal(t, "there", renamed.Name)
	})

	t.Run("ListFilters", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		b.create(t, template.CreateInput{Name: "alpha", Description: "GPU box", ProviderID: b.docker, Config: alpine,
			Labels: map[string]string{"team": "a"}})
		b.create(t, template.CreateInput{Name: "beta", ProviderID: b.docker, Config: alpine, Labels: map[string]string{"team": "b"}})
		b.create(t, template.CreateInput{Name: "gamma", ProviderID: b.local, Enabled: ptr(false)})
		other := testfactory.Workspace(t, b.pool, b.admin.OrganizationID, b.admin.PrincipalID, nil).ID
		testfactory.EnvironmentTemplate(t, b.pool, testfactory.Owner{WorkspaceID: other, PrincipalID: b.admin.PrincipalID},
			&testfactory.EnvironmentTemplateOpts{Name: "alpha"})

		names := func(in template.ListInput) []string {
			t.Helper()
			page, err := b.svc.List(ctx, b.editor, in)
			require.NoError(t, err)
			var out []string
			for _, tpl := range page.Items {
				out = append(out, tpl.Name)
			}
			return out
		}
		require.Equal(t, []string{"gamma", "beta", "alpha"}, names(template.ListInput{}))
		require.Equal(t, []string{"alpha"}, names(template.ListInput{Labels: []string{"team:a"}}))
		require.Equal(t, []string{"alpha"}, names(template.ListInput{Q: ptr("gpu")}))
		require.Equal(t, []string{"gamma"}, names(template.ListInput{Archived: ptr(true)}), "archived lists the disabled")
		require.Equal(t, []string{"beta", "alpha"}, names(template.ListInput{Archived: ptr(false)}))
		require.Equal(t, []string{"beta"}, names(template.ListInput{Limit: ptr(1), Cursor: func() *string {
			page, err := b.svc.List(ctx, b.editor, template.ListInput{Limit: ptr(1)})
			require.NoError(t, err)
			return page.NextCursor
		}()}))
		_, err := b.svc.List(ctx, b.editor, template.ListInput{Cursor: ptr("%%%")})
		requireRefused(t, err, apperr.KindInvalidArgument, "cursor")
	})

	t.Run("AnotherWorkspacesTemplateIsNotFound", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		tpl := b.create(t, template.CreateInput{ProviderID: b.docker, Config: alpine})
		stranger := b.admin.Caller(auth.RoleAdmin)
		stranger.WorkspaceID = testfactory.Workspace(t, b.pool, b.admin.OrganizationID, b.admin.PrincipalID, nil).ID
		_, err := b.svc.Get(t.Context(), stranger, tpl.ID)
		requireRefused(t, err, apperr.KindNotFound, "")
		_, err = b.svc.Update(t.Context(), stranger, template.UpdateInput{ID: tpl.ID, IfMatch: ptr("*"), Name: ptr("mine")})
		requireRefused(t, err, apperr.KindNotFound, "")
	})
}
