package agent_test

import (
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/agent"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/refcheck"
	"github.com/svcdev/svc/internal/revision"
	"github.com/svcdev/svc/internal/testdb"
	"github.com/svcdev/svc/internal/testfactory"
)

// testBundle is an agent service on a fresh database with one workspace, an
// editor caller and an enabled model "main".
type testBundle struct {
	pool   *pgxpool.Pool
	svc    *agent.Service
	caller *auth.Caller
}

func setup(t testing.TB) *testBundle {
	t.Helper()
	pool := testdb.New(t)
	admin := testfactory.Bootstrap(t, pool)
	reg, err := catalog.New(catalog.Options{})
	require.NoError(t, err)
	testfactory.Model(t, pool, admin.Owner(), &testfactory.ModelOpts{API: "responses", Provider: &testfactory.ProviderOpts{Type: "openai"}})
	return &testBundle{
		pool: pool, svc: agent.NewService(pool, reg, refcheck.None{}),
		caller: &auth.Caller{PrincipalID: admin.PrincipalID, OrganizationID: admin.OrganizationID, WorkspaceID: admin.WorkspaceID, Role: auth.RoleEditor},
	}
}

func (b *testBundle) create(t testing.TB, name, cfg string) revision.Head {
	t.Helper()
	h, err := b.svc.Create(t.Context(), b.caller, revision.CreateInput{Name: name, Config: json.RawMessage(cfg)})
	require.NoError(t, err)
	return h
}

func TestRequireRunnable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	a := b.create(t, "runner", `{"model":"main"}`)
	other := b.create(t, "other", `{"model":"main"}`)
	no := false
	p, err := b.svc.Publish(ctx, b.caller, revision.PublishInput{HeadID: a.ID, Config: json.RawMessage(`{"model":"main","instructions":"v2"}`), MakeDefault: &no})
	require.NoError(t, err)
	require.True(t, p.Created)

	// Unpinned: the default revision (still 1); pinned: the pin.
	r, err := b.svc.RequireRunnable(ctx, b.pool, b.caller.WorkspaceID, a.ID, nil)
	require.NoError(t, err)
	require.Equal(t, a.DefaultRevisionID, r.ID)
	require.Equal(t, "main", r.Config.Model)
	r, err = b.svc.RequireRunnable(ctx, b.pool, b.caller.WorkspaceID, a.ID, &p.Revision.ID)
	require.NoError(t, err)
	require.Equal(t, "v2", r.Config.Instructions)

	// Another agent's revision, another workspace, an absent agent: 404.
	_, err = b.svc.RequireRunnable(ctx, b.pool, b.caller.WorkspaceID, a.ID, &other.DefaultRevisionID)
	require.Equal(t, apperr.KindNotFound, apperr.KindOf(err))
	_, err = b.svc.RequireRunnable(ctx, b.pool, "ws_01jd5v6w1q3yb8j8y3tn9z2k7h", a.ID, nil)
	require.Equal(t, apperr.KindNotFound, apperr.KindOf(err))
	_, err = b.svc.RequireRunnable(ctx, b.pool, b.caller.WorkspaceID, "ap_01jd5v6w1q3yb8j8y3tn9z2k7h", nil)
	require.Equal(t, apperr.KindNotFound, apperr.KindOf(err))

	// Archived agents start no new runs.
	star := "*"
	_, err = b.svc.Archive(ctx, b.caller, a.ID, &star)
	require.NoError(t, err)
	_, err = b.svc.RequireRunnable(ctx, b.pool, b.caller.WorkspaceID, a.ID, nil)
	require.Equal(t, apperr.KindConflict, apperr.KindOf(err))
}

func TestNormalizeIsCanonical(t *testing.T) {
	t.Parallel()
	a, err := agent.Normalize(json.RawMessage(`{"model":"m","tools":{"web":{"provider_id":"p","operations":["search","fetch"]},
		"connections":[{"connection_id":"c","actions":["b","a"]}]}}`))
	require.NoError(t, err)
	b, err := agent.Normalize(json.RawMessage(`{"limits":{"max_steps":100},"instructions":"","model":"m","skills":[],
		"tools":{"connections":[{"actions":["a","b"],"connection_id":"c"}],"web":{"operations":["fetch","search"],"provider_id":"p"},"environment":null}}`))
	require.NoError(t, err)
	ca, err := revision.Canonical(a)
	require.NoError(t, err)
	cb, err := revision.Canonical(b)
	require.NoError(t, err)
	require.Equal(t, string(ca), string(cb))
	require.Equal(t, revision.ContentHash(ca), revision.ContentHash(cb))
	c, err := agent.Normalize(json.RawMessage(`{"model":"m","tools":{"web":{"provider_id":"p","operations":["search"]}}}`))
	require.NoError(t, err)
	cc, err := revision.Canonical(c)
	require.NoError(t, err)
	require.NotEqual(t, revision.ContentHash(ca), revision.ContentHash(cc))
	require.Equal(t, agent.Context{Strategy: agent.ContextSummarize}, a.Context, "summarize by default")
	d, err := agent.Normalize(json.RawMessage(`{"model":"m","context":{"strategy":"truncate"}}`))
	require.NoError(t, err)
	require.Equal(t, agent.ContextTruncate, d.Context.Strategy)
	e, err := agent.Normalize(json.RawMessage(`{"model":"m","context":{}}`))
	require.NoError(t, err)
	require.Equal(t, agent.ContextSummarize, e.Context.Strategy)

	for raw, field := range map[string]string{
		`{"model":"m","limits":{"timeout_seconds":0}}`:                                         "config.limits.timeout_seconds",
		`{"model":"m","tools":{"connections":[{"connection_id":"c","actions":[]}]}}`:           "config.tools.connections[0].actions",
		`{"model":"m","tools":{"connections":[{"connection_id":"c","actions":["bad name"]}]}}`: "config.tools.connections[0].actions[0]",
		`{"model":"m","tools":{"web":{"provider_id":"p","operations":[]}}}`:                    "config.tools.web.operations",
		`{"model":"m","skills":[{"skill_id":"s"},{"skill_id":"s"}]}`:                           "config.skills[1].skill_id",
		`{"model":"m"} {"model":"n"}`:                                                          "config",
		`{"model":"m","context":{"strategy":"forget"}}`:                                        "config.context.strategy",
		`{"model":"m","context":{"window":1000}}`:                                              "config",
	} {
		_, err := agent.Normalize(json.RawMessage(raw))
		e, ok := apperr.As(err)
		require.True(t, ok, raw)
		require.Equal(t, apperr.KindInvalidArgument, e.Kind, raw)
		require.Equal(t, field, e.Details[0].Field, raw)
	}
}
