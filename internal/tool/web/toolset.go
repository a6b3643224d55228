package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/provider"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/tool"
)

// Deps are what the web toolset reads and calls through.
type Deps struct {
	// Providers open the agent's web provider.
	Providers *provider.Service
	// HTTPClient is the endpoint policy's guarded client (timeout 0) that
	// vendor calls go through.
	HTTPClient *http.Client
}

// Toolset builds the web tools of runs.
type Toolset struct{ d Deps }

// New returns the web toolset.
func New(d Deps) *Toolset { return &Toolset{d: d} }

var _ tool.Toolset = (*Toolset)(nil).ForRun

// ForRun offers the agent's web toolset (web_search, web_fetch) through its
// web provider; none when the agent has no web toolset. A provider that no
// longer exists, or that its vendor client refuses, fails the run. Every
// call checks that the provider is still enabled, so disabling it stops new
// use at once; the model sees the refusal.
func (t *Toolset) ForRun(ctx context.Context, rc tool.RunContext) ([]tool.Tool, error) {
	w := rc.Config.Tools.Web
	if w == nil {
		return nil, nil
	}
	p, err := t.d.Providers.OpenForRun(ctx, rc.Run.WorkspaceID, catalog.KindWeb, w.ProviderID)
	if apperr.KindOf(err) == apperr.KindNotFound {
		return nil, &run.Failure{Code: "not_found", Message: "the agent's web provider no longer exists"}
	}
	if err != nil {
		return nil, fmt.Errorf("read web provider: %w", err)
	}
	cred, err := p.CredentialJSON()
	if err != nil {
		return nil, err
	}
	c, err := NewClient(Provider{Type: p.Type, Config: p.Config, Credential: cred, HTTPClient: t.d.HTTPClient})
	if err != nil {
		return nil, &run.Failure{Code: "invalid_configuration", Message: fmt.Sprintf("the web provider cannot be used: %v", err)}
	}
	tools := Tools(c, w.Operations)
	for i := range tools {
		tools[i].Call = t.whileEnabled(rc.Run.WorkspaceID, p.ID, tools[i].Call)
	}
	return tools, nil
}

// whileEnabled refuses a call once provider providerID is disabled.
func (t *Toolset) whileEnabled(workspaceID, providerID string, call func(context.Context, json.RawMessage) (tool.Result, error)) func(context.Context, json.RawMessage) (tool.Result, error) {
	return func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
		enabled, err := t.d.Providers.Enabled(ctx, workspaceID, providerID)
		if err != nil {
			return tool.Result{}, err
		}
		if !enabled {
			return tool.Errorf("the provider of this tool is disabled; it cannot be used"), nil
		}
		return call(ctx, args)
	}
}
