package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/refcheck"
	"github.com/svcdev/svc/internal/revision"
)

// Revision is a revision of an agent.
type Revision = revision.Revision[Config]

// Service manages the agents of the caller's workspace: the head and revision
// operations of revision.Service, over agent configurations.
type Service struct {
	*revision.Service[Config]
}

// NewService returns the agent service over pool. Web toolsets are checked
// against the provider types of reg; references to environment templates,
// memories and connections go to ext.
func NewService(pool *pgxpool.Pool, reg *catalog.Registry, ext refcheck.External) *Service {
	return &Service{Service: revision.NewService[Config](pool, revision.KindAgent, &content{q: db.New(), reg: reg, ext: ext})}
}

// RequireRunnable is what starting a run checks, in the run's own transaction
// q: the agent exists in the workspace (else 404 naming agent_id) and is not
// archived (archived agents
// start no new runs: 409 conflict), and the revision to pin is revisionID
// when given (it must be one of the agent's: else 404 naming revision_id) or
// the default revision. The agent row is locked FOR SHARE until q ends, so a
// concurrent archive is either seen here or waits for the run to be written.
func (s *Service) RequireRunnable(ctx context.Context, q db.DBTX, workspaceID, agentID string, revisionID *string) (Revision, error) {
	return s.Runnable(ctx, q, workspaceID, agentID, revisionID)
}

// content is the agent kind's contribution to revision.Service.
type content struct {
	q   *db.Queries
	reg *catalog.Registry
	ext refcheck.External
}

// Normalize implements revision.Content.
func (*content) Normalize(raw json.RawMessage) (Config, error) { return Normalize(raw) }

// Precheck implements revision.Content: an agent's references are all
// cheap to check, so they are checked in the transaction only.
func (*content) Precheck(context.Context, *auth.Caller, Config) error { return nil }

// CheckReferences implements revision.Content: every reference of cfg, in the
// order of its members; the first failure is the answer.
func (c *content) CheckReferences(ctx context.Context, tx pgx.Tx, caller *auth.Caller, headID string, cfg Config) error {
	ws := caller.WorkspaceID
	if err := c.model(ctx, tx, ws, cfg.Model); err != nil {
		return err
	}
	if w := cfg.Tools.Web; w != nil {
		if err := c.web(ctx, tx, ws, w); err != nil {
			return err
		}
	}
	if e := cfg.Tools.Environment; e != nil {
		if err := c.ext.EnvironmentTemplate(ctx, tx, ws, e.TemplateID, "config.tools.environment.template_id"); err != nil {
			return err
		}
	}
	for i, con := range cfg.Tools.Connections {
		field := fmt.Sprintf("config.tools.connections[%d]", i)
		if err := c.ext.Connection(ctx, tx, ws, con.ConnectionID, con.Actions, field+".connection_id", field+".actions"); err != nil {
			return err
		}
	}
	if err := c.skills(ctx, tx, ws, cfg.Skills); err != nil {
		return err
	}
	for i, m := range cfg.Memories {
		if err := c.ext.Memory(ctx, tx, ws, m.MemoryID, fmt.Sprintf("config.memories[%d].memory_id", i)); err != nil {
			return err
		}
	}
	return c.subagents(ctx, tx, ws, headID, cfg.Subagents)
}

// model checks the model key: a model of the workspace, enabled, on an
// enabled provider. The model row is locked FOR SHARE so that a concurrent
// disable is seen or waits.
func (c *content) model(ctx context.Context, tx pgx.Tx, ws, key string) error {
	row, err := c.q.ModelForReference(ctx, tx, db.ModelForReferenceParams{WorkspaceID: ws, Key: key})
	if dbx.IsNotFound(err) {
		return refcheck.NotFound("config.model", "no model with this key in the workspace")
	}
	if err != nil {
		return err
	}
	switch {
	case !row.Enabled:
		return refcheck.Disabled("config.model", "the model is disabled")
	case !row.ProviderEnabled:
		return refcheck.Disabled("config.model", "the model's provider is disabled")
	}
	return nil
}

// web checks the web toolset: an enabled web provider of the workspace whose
// type serves every listed operation.
func (c *content) web(ctx context.Context, tx pgx.Tx, ws string, w *WebTools) error {
	const field = "config.tools.web.provider_id"
	row, err := c.q.WebProviderForReference(ctx, tx, db.WebProviderForReferenceParams{WorkspaceID: ws, ID: w.ProviderID})
	if dbx.IsNotFound(err) {
		return refcheck.NotFound(field, "no web provider with this id in the workspace")
	}
	if err != nil {
		return err
	}
	if row.Kind != string(catalog.KindWeb) {
		return apperr.InvalidField(field, fmt.Sprintf("is a %s provider, not a web provider", row.Kind))
	}
	if !row.Enabled {
		return refcheck.Disabled(field, "the web provider is disabled")
	}
	t, ok := c.reg.Lookup(row.Type)
	if !ok {
		return apperr.New(apperr.KindConflict, fmt.Sprintf("provider type %q is not installed", row.Type))
	}
	for i, op := range w.Operations {
		if !slices.Contains(t.Operations, catalog.Operation(op)) {
			return apperr.InvalidField(fmt.Sprintf("config.tools.web.operations[%d]", i), fmt.Sprintf("the %s provider type does not serve %s", t.ID, op))
		}
	}
	return nil
}

// skills checks the skills: each a skill of the workspace that is not
// archived, and each pinned revision one of that skill's.
func (c *content) skills(ctx context.Context, tx pgx.Tx, ws string, list []SkillRef) error {
	if len(list) == 0 {
		return nil
	}
	ids := make([]string, len(list))
	var pins []string
	for i, s := range list {
		ids[i] = s.SkillID
		if s.RevisionID != nil {
			pins = append(pins, *s.RevisionID)
		}
	}
	heads, err := c.heads(ctx, tx, ws, revision.KindSkill, ids)
	if err != nil {
		return err
	}
	owner := map[string]string{}
	if len(pins) > 0 {
		rows, err := c.q.RevisionsOfHeads(ctx, tx, pins)
		if err != nil {
			return err
		}
		for _, r := range rows {
			owner[r.ID] = r.HeadID
		}
	}
	for i, s := range list {
		field := fmt.Sprintf("config.skills[%d]", i)
		archived, ok := heads[s.SkillID]
		switch {
		case !ok:
			return refcheck.NotFound(field+".skill_id", "no skill with this id in the workspace")
		case archived:
			return refcheck.Conflict(field+".skill_id", "the skill is archived")
		case s.RevisionID != nil && owner[*s.RevisionID] != s.SkillID:
			return refcheck.NotFound(field+".revision_id", "no revision with this id belongs to the skill")
		}
	}
	return nil
}

// subagents checks the subagents: each an agent of the workspace, not this
// one, and not archived.
func (c *content) subagents(ctx context.Context, tx pgx.Tx, ws, self string, list []SubagentRef) error {
	if len(list) == 0 {
		return nil
	}
	ids := make([]string, len(list))
	for i, a := range list {
		ids[i] = a.AgentID
	}
	heads, err := c.heads(ctx, tx, ws, revision.KindAgent, ids)
	if err != nil {
		return err
	}
	for i, a := range list {
		field := fmt.Sprintf("config.subagents[%d].agent_id", i)
		archived, ok := heads[a.AgentID]
		switch {
		case a.AgentID == self:
			return apperr.InvalidField(field, "an agent cannot be its own subagent")
		case !ok:
			return refcheck.NotFound(field, "no agent with this id in the workspace")
		case archived:
			return refcheck.Conflict(field, "the agent is archived")
		}
	}
	return nil
}

// heads returns, for the ids that are heads of kind in the workspace, whether
// each is archived.
func (c *content) heads(ctx context.Context, tx pgx.Tx, ws string, kind revision.Kind, ids []string) (map[string]bool, error) {
	rows, err := c.q.HeadsForReference(ctx, tx, db.HeadsForReferenceParams{WorkspaceID: ws, Kind: string(kind), Ids: ids})
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(rows))
	for _, r := range rows {
		out[r.ID] = r.ArchivedAt != nil
	}
	return out, nil
}
