// Package connection is the connection toolset: it offers the actions of an
// agent's connections as tools (AgentConfig.tools.connections;
// docs/decisions/0034-connection-tools.md).
//
// A connection is an account connected through Composio. Tools discovers the
// actions (Composio's "tools") of each connection's toolkit with their input
// JSON Schemas, keeps those the agent's allow-list names (at most MaxActions
// per connection), and offers each as a tool whose call executes the action
// as the connected account. Every call reads the connection and its provider
// again through the connection service (package connection under
// internal/), so a disabled, revoked or re-authorized connection, a disabled
// provider or a rotated key takes effect at the next call.
package connection

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/svcdev/svc/internal/agent"
	conn "github.com/svcdev/svc/internal/connection"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/tool"
)

// Bounds and defaults.
const (
	// MaxActions is the most actions offered per connection.
	MaxActions = 64
	// DefaultTimeout bounds each Composio call when Deps.Timeout is 0.
	DefaultTimeout = 60 * time.Second
	// DefaultCacheTTL is how long a connection's discovered actions are
	// reused when Deps.CacheTTL is 0.
	DefaultCacheTTL = 5 * time.Minute
)

// Deps are what a Toolset reads and calls.
type Deps struct {
	// Connections read the connections and their providers, credentials
	// opened.
	Connections *conn.Service
	// HTTPClient is the endpoint policy's guarded client; Timeout bounds
	// each call made through it (0: DefaultTimeout).
	HTTPClient *http.Client
	Timeout    time.Duration
	// CacheTTL is how long discovered actions are reused (0: DefaultCacheTTL).
	CacheTTL time.Duration
	// Log may be nil.
	Log *slog.Logger
	// Now is the clock of the cache; nil is time.Now.
	Now func() time.Time
}

// Toolset builds the tools of agents' connections. It is safe for concurrent
// use; its cache of discovered actions is shared by the runs of the process.
type Toolset struct {
	d     Deps
	log   *slog.Logger
	cache *cache
}

// New returns a Toolset over deps.
func New(deps Deps) *Toolset {
	if deps.Timeout <= 0 {
		deps.Timeout = DefaultTimeout
	}
	if deps.CacheTTL <= 0 {
		deps.CacheTTL = DefaultCacheTTL
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	log := deps.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Toolset{d: deps, log: log, cache: newCache(deps.CacheTTL, deps.Now)}
}

// Codes of Error: those of conn.Unusable, and CodeUnavailable.
const (
	CodeNotFound             = conn.CodeNotFound
	CodeDisabled             = conn.CodeDisabled
	CodeUnauthorized         = conn.CodeUnauthorized
	CodeInvalidConfiguration = conn.CodeInvalidConfiguration
	// CodeUnavailable: Composio did not list the connection's actions.
	CodeUnavailable = "unavailable"
)

// Error is a connection whose tools cannot be offered. Msg is safe to show:
// it never holds a credential, an address or Composio's answer. Transient
// errors (Composio rate limiting, a 5xx, a network failure) may pass if the
// run is retried later.
type Error struct {
	ConnectionID string
	Code         string
	Msg          string
	Transient    bool
}

func (e *Error) Error() string {
	return fmt.Sprintf("connection %s: %s", e.ConnectionID, e.Msg)
}

// Tools returns the tools of the connections refs of workspace workspaceID,
// in the order of refs and, within a connection, in Composio's order. A
// connection that cannot be used now (absent, disabled, without credential,
// its provider disabled) or whose actions Composio does not list is an
// *Error; a failure of the database or of ctx is another error.
func (t *Toolset) Tools(ctx context.Context, workspaceID string, refs []agent.ConnectionTools) ([]tool.Tool, error) {
	apps := make(map[string]int, len(refs))
	targets := make([]target, len(refs))
	for i, ref := range refs {
		tg, err := t.load(ctx, workspaceID, ref.ConnectionID)
		if err != nil {
			return nil, err
		}
		targets[i] = tg
		apps[tg.app]++
	}
	names := newNamer()
	var out []tool.Tool
	for i, ref := range refs {
		tg := targets[i]
		cat, err := t.actions(ctx, tg, ref.Actions)
		if err != nil {
			return nil, err
		}
		alias := ""
		if apps[tg.app] > 1 {
			alias = fmt.Sprintf("c%d", i+1)
		}
		for _, a := range cat.actions {
			name, ok := names.name(alias, a.Slug, tg.connectionID)
			if !ok {
				t.log.Warn("connection action left out: no unique tool name", "connection_id", tg.connectionID, "action", a.Slug)
				continue
			}
			out = append(out, tool.Tool{
				Def:     definition(name, a, tg, cat.truncated),
				Call:    t.caller(workspaceID, tg.connectionID, a),
				Toolset: agent.ToolsetConnection,
			})
		}
	}
	return out, nil
}

var _ tool.Toolset = (*Toolset)(nil).ForRun

// ForRun offers the actions of the run's agent's connections (Tools); none
// when it lists none. A connection that cannot be used when the attempt
// starts (disabled, revoked, gone) fails the run, as a disabled model does;
// Composio out of reach is a failure of the attempt, retried.
func (t *Toolset) ForRun(ctx context.Context, rc tool.RunContext) ([]tool.Tool, error) {
	if len(rc.Config.Tools.Connections) == 0 {
		return nil, nil
	}
	// The run's tools log with the attempt's logger, under its run's ids.
	forRun := *t
	forRun.log = rc.Log.With("toolset", agent.ToolsetConnection)
	tools, err := forRun.Tools(ctx, rc.Run.WorkspaceID, rc.Config.Tools.Connections)
	if ce, ok := errors.AsType[*Error](err); ok && !ce.Transient {
		return nil, &run.Failure{Code: ce.Code, Message: ce.Msg}
	}
	return tools, err
}
