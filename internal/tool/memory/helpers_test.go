package memory_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/identity"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/memory"
	"github.com/svcdev/svc/internal/provider"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/provider/probe"
	"github.com/svcdev/svc/internal/testdb"
	"github.com/svcdev/svc/internal/testfactory"
	"github.com/svcdev/svc/internal/tool"
	memorytool "github.com/svcdev/svc/internal/tool/memory"
)

// callTimeout bounds each call of the toolset under test; only the test of a
// vendor that never answers waits for it.
const callTimeout = 2 * time.Second

type bundle struct {
	pool      *pgxpool.Pool
	ring      *keyring.Ring
	reg       *catalog.Registry
	policy    *endpoint.Policy
	providers *provider.Service
	memories  *memory.Service
	caller    *auth.Caller
	ts        *memorytool.Toolset
}

// setup makes a database with a workspace, a key ring, and an endpoint
// policy that lets svc reach the stand-ins servers over loopback.
func setup(t testing.TB, servers ...*httptest.Server) *bundle {
	t.Helper()
	pool := testdb.New(t)
	admin := testfactory.Bootstrap(t, pool)
	path := filepath.Join(t.TempDir(), "keyring.json")
	require.NoError(t, keyring.Generate(path))
	ring, err := keyring.Load(path)
	require.NoError(t, err)
	reg, err := catalog.New(catalog.Options{})
	require.NoError(t, err)
	policy := loopbackPolicy(t, servers...)
	b := &bundle{
		pool: pool, ring: ring, reg: reg, policy: policy,
		providers: provider.NewService(pool, ring, reg, policy, probe.New(policy, callTimeout)),
		memories:  memory.NewService(pool, reg, ring),
		caller:    &auth.Caller{PrincipalID: admin.PrincipalID, WorkspaceID: admin.WorkspaceID, OrganizationID: admin.OrganizationID, Role: auth.RoleAdmin, OrganizationRole: auth.OrgOwner},
	}
	b.ts = memorytool.New(memorytool.Deps{Memories: b.memories, Registry: reg, Policy: policy, Timeout: callTimeout})
	return b
}

// loopbackPolicy allows plain HTTP to the loopback ports of the servers, as
// an operator would for a vendor on its own network.
func loopbackPolicy(t testing.TB, servers ...*httptest.Server) *endpoint.Policy {
	t.Helper()
	p := &endpoint.Policy{AllowHTTP: true, AllowedPrefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	for _, s := range servers {
		u, err := url.Parse(s.URL)
		require.NoError(t, err)
		port, err := strconv.Atoi(u.Port())
		require.NoError(t, err)
		p.AllowedPorts = append(p.AllowedPorts, uint16(port))
	}
	return p
}

// otherWorkspace is a caller in a second workspace of the organization.
func (b *bundle) otherWorkspace(t testing.TB) *auth.Caller {
	t.Helper()
	other, err := identity.NewService(b.pool, nil).CreateWorkspace(t.Context(), b.caller, identity.CreateWorkspaceInput{Name: "other " + id.New("x")})
	require.NoError(t, err)
	c := *b.caller
	c.WorkspaceID = other.Workspace.ID
	return &c
}

// builtin creates a builtin memory.
func (b *bundle) builtin(t testing.TB, c *auth.Caller, name, description string) memory.Memory {
	t.Helper()
	m, err := b.memories.Create(t.Context(), c, memory.CreateInput{Name: name, Description: description, Kind: memory.KindBuiltin})
	require.NoError(t, err)
	return m
}

// memoryProvider creates a memory provider of type typ calling srv with key.
func (b *bundle) memoryProvider(t testing.TB, typ string, srv *httptest.Server, key string) provider.Provider {
	t.Helper()
	cfg := map[string]any{"index_host": srv.URL}
	if typ == "turbopuffer" {
		cfg = map[string]any{"base_url": srv.URL, "region": "gcp-us-central1"}
	}
	p, err := b.providers.Create(t.Context(), b.caller, catalog.KindMemory, provider.CreateInput{
		Type: typ, Name: typ + " " + id.New("x"), Config: cfg, Credential: map[string]any{"api_key": key},
	})
	require.NoError(t, err)
	return p
}

// recordMemory creates a record memory on provider p.
func (b *bundle) recordMemory(t testing.TB, p provider.Provider, name string) memory.Memory {
	t.Helper()
	m, err := b.memories.Create(t.Context(), b.caller, memory.CreateInput{Name: name, Kind: memory.KindRecord, ProviderID: &p.ID})
	require.NoError(t, err)
	return m
}

// tools builds the tools of c's workspace for the memories, by name.
func (b *bundle) tools(t testing.TB, c *auth.Caller, memoryIDs ...string) map[string]tool.Tool {
	t.Helper()
	list, err := b.ts.Tools(t.Context(), c.WorkspaceID, memoryIDs)
	require.NoError(t, err)
	out := map[string]tool.Tool{}
	for _, tl := range list {
		out[tl.Def.Name] = tl
	}
	return out
}

// call calls tl with args (a value encoded as JSON) in a run's context and
// requires it not to fail with a Go error.
func call(t testing.TB, tl tool.Tool, runID string, args any) tool.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	ctx := t.Context()
	if runID != "" {
		ctx = memorytool.WithCallOptions(ctx, memorytool.CallOptions{RunID: runID})
	}
	res, err := tl.Call(ctx, raw)
	require.NoError(t, err)
	return res
}

// ok requires a successful result and decodes it into a fresh T.
func ok[T any](t testing.TB, res tool.Result) T {
	t.Helper()
	require.False(t, res.IsError, res.Text)
	var v T
	require.NoError(t, json.Unmarshal([]byte(res.Text), &v), res.Text)
	return v
}

// failed requires a tool error and returns its text.
func failed(t testing.TB, res tool.Result) string {
	t.Helper()
	require.True(t, res.IsError, "want a tool error, got %s", res.Text)
	return res.Text
}

// Answers as the model reads them.
type (
	record struct {
		ID       string         `json:"id"`
		Content  string         `json:"content"`
		Metadata map[string]any `json:"metadata"`
		Score    *float64       `json:"score"`
	}
	searchAnswer struct {
		Memory  string   `json:"memory"`
		Records []record `json:"records"`
	}
	readAnswer struct {
		Memory string `json:"memory"`
		record
	}
	writeAnswer struct {
		Memory string `json:"memory"`
		ID     string `json:"id"`
	}
)

// write writes content with metadata to memory and returns the record id.
func write(t testing.TB, tools map[string]tool.Tool, runID, memoryArg, content string, metadata any) string {
	t.Helper()
	args := map[string]any{"memory": memoryArg, "content": content}
	if metadata != nil {
		args["metadata"] = metadata
	}
	w := ok[writeAnswer](t, call(t, tools[memorytool.WriteTool], runID, args))
	require.Regexp(t, `^mrec_[0-9a-z]{26}$`, w.ID)
	return w.ID
}

// ctxWithRun is a context carrying a run id, for direct calls.
func ctxWithRun(ctx context.Context, runID string) context.Context {
	return memorytool.WithCallOptions(ctx, memorytool.CallOptions{RunID: runID})
}
