package connection_test

import (
	"context"
	"encoding/json"
	"net/netip"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/agent"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/connection"
	"github.com/svcdev/svc/internal/connection/composiotest"
	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/identity"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/provider"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/provider/probe"
	"github.com/svcdev/svc/internal/testdb"
	"github.com/svcdev/svc/internal/testfactory"
	"github.com/svcdev/svc/internal/tool"
	connectiontool "github.com/svcdev/svc/internal/tool/connection"
)

const testKey = "sk-composio-test-5be1d07c"

// namePattern is what every vendor accepts as a tool name.
var namePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// bundle is a database with a workspace, a Composio stand-in, a connector
// provider pointing at it and a Toolset whose clock the test moves.
type bundle struct {
	pool        *pgxpool.Pool
	srv         *composiotest.Server
	providers   *provider.Service
	connections *connection.Service
	caller      *auth.Caller
	provider    provider.Provider
	clock       *clock
	tools       *connectiontool.Toolset
}

// clock is a settable time.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func setup(t *testing.T) *bundle {
	t.Helper()
	pool := testdb.New(t)
	admin := testfactory.Bootstrap(t, pool)
	path := filepath.Join(t.TempDir(), "keyring.json")
	require.NoError(t, keyring.Generate(path))
	ring, err := keyring.Load(path)
	require.NoError(t, err)
	reg, err := catalog.New(catalog.Options{})
	require.NoError(t, err)
	srv := composiotest.Start(t, testKey)
	policy := loopbackPolicy(t, srv.URL)
	b := &bundle{
		pool: pool, srv: srv,
		providers:   provider.NewService(pool, ring, reg, policy, probe.New(policy, 5*time.Second)),
		connections: connection.NewService(pool, ring, reg, connection.NewVendors(policy, 5*time.Second), connection.Options{Owner: "test"}),
		caller: &auth.Caller{PrincipalID: admin.PrincipalID, OrganizationID: admin.OrganizationID, WorkspaceID: admin.WorkspaceID,
			Role: auth.RoleAdmin, OrganizationRole: "owner"},
		clock: &clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
	}
	b.provider = b.composioProvider(t, b.caller)
	b.tools = connectiontool.New(connectiontool.Deps{
		Connections: b.connections, HTTPClient: policy.HTTPClient(0), Timeout: 5 * time.Second, Now: b.clock.Now,
	})
	return b
}

// loopbackPolicy allows plain HTTP to the loopback port of serverURL, as an
// operator would for a vendor on its own network.
func loopbackPolicy(t *testing.T, serverURL string) *endpoint.Policy {
	t.Helper()
	u, err := url.Parse(serverURL)
	require.NoError(t, err)
	port, err := strconv.Atoi(u.Port())
	require.NoError(t, err)
	return &endpoint.Policy{
		AllowHTTP:       true,
		AllowedPrefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		AllowedPorts:    []uint16{uint16(port)},
	}
}

// composioProvider creates a Composio provider of c's workspace calling the
// stand-in with its key.
func (b *bundle) composioProvider(t *testing.T, c *auth.Caller) provider.Provider {
	t.Helper()
	p, err := b.providers.Create(t.Context(), c, catalog.KindConnector, provider.CreateInput{
		Type: "composio", Name: "Composio " + id.New("x"), Config: map[string]any{"base_url": b.srv.URL + "/"},
		Credential: map[string]any{"api_key": testKey},
	})
	require.NoError(t, err)
	return p
}

// connect creates a connection of app in c's workspace through p, authorized
// as a connected account at the stand-in, and returns it with the account id.
func (b *bundle) connect(t *testing.T, c *auth.Caller, p provider.Provider, app, name string) (connection.Connection, string) {
	t.Helper()
	user := "user-" + id.New("x")[2:10]
	account := b.srv.AddAccount(user, app)
	conn, err := b.connections.Create(t.Context(), c, connection.CreateInput{
		ProviderID: p.ID, App: app, Name: name, Account: &user,
		Config:     map[string]any{"auth_config_id": "ac_oauth"},
		Credential: map[string]any{"connected_account_id": account},
	})
	require.NoError(t, err)
	return conn, account
}

// otherWorkspace creates a second workspace of the organization and returns
// a caller in it.
func (b *bundle) otherWorkspace(t *testing.T) *auth.Caller {
	t.Helper()
	ws, err := identity.NewService(b.pool, func() {}).CreateWorkspace(t.Context(), b.caller, identity.CreateWorkspaceInput{Name: "other"})
	require.NoError(t, err)
	c := *b.caller
	c.WorkspaceID = ws.Workspace.ID
	return &c
}

// refs is the agent configuration's connections part.
func refs(pairs ...any) []agent.ConnectionTools {
	var out []agent.ConnectionTools
	for i := 0; i < len(pairs); i += 2 {
		var acts []string
		if pairs[i+1] != nil {
			acts = pairs[i+1].([]string)
		}
		out = append(out, agent.ConnectionTools{ConnectionID: pairs[i].(string), Actions: acts})
	}
	return out
}

// byName finds a tool.
func byName(t *testing.T, tools []tool.Tool, name string) tool.Tool {
	t.Helper()
	for _, tl := range tools {
		if tl.Def.Name == name {
			return tl
		}
	}
	names := make([]string, len(tools))
	for i, tl := range tools {
		names[i] = tl.Def.Name
	}
	t.Fatalf("no tool %q among %v", name, names)
	return tool.Tool{}
}

// call calls tl with args, failing the test on a Go error.
func call(t *testing.T, tl tool.Tool, args string) tool.Result {
	t.Helper()
	res, err := tl.Call(t.Context(), json.RawMessage(args))
	require.NoError(t, err)
	return res
}

// noKey fails when s holds the provider's key.
func noKey(t *testing.T, s string) {
	t.Helper()
	require.NotContains(t, s, testKey)
	require.NotContains(t, s, testKey[len(testKey)-8:])
}

// githubTools are a small GitHub toolkit.
func githubTools() []composiotest.Tool {
	return []composiotest.Tool{
		{
			Slug: "GITHUB_CREATE_AN_ISSUE", Toolkit: "github", Name: "Create an issue", Version: "20250909_00",
			Description: "Creates a new issue in a GitHub repository.",
			InputParameters: map[string]any{"type": "object", "properties": map[string]any{
				"owner": map[string]any{"type": "string"}, "repo": map[string]any{"type": "string"}, "title": map[string]any{"type": "string"},
			}, "required": []any{"owner", "repo", "title"}},
			Run: func(args map[string]any) (any, string) {
				if args["repo"] == "missing" {
					return nil, "Not Found: the repository does not exist"
				}
				return map[string]any{"number": 42, "title": args["title"]}, ""
			},
		},
		{
			Slug: "GITHUB_LIST_REPOSITORIES", Toolkit: "github", Name: "List repositories", Version: "20250909_00",
			Description: "Lists the repositories of the authenticated user.",
			InputParameters: map[string]any{"type": "object", "properties": map[string]any{
				"per_page": map[string]any{"type": "integer"},
			}},
		},
	}
}

// ctxCancelled is a cancelled context.
func ctxCancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// contains reports whether s contains every part.
func contains(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
