package testfactory

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/id"
)

// WorkspaceOpts describes a workspace to add to an organization.
type WorkspaceOpts struct {
	ID   string // default: a new workspace id
	Name string // default: "other"
}

// Workspace adds a workspace to organizationID, made by principalID. The
// principal gets no membership: services act for an *auth.Caller, which
// names the workspace itself.
func Workspace(tb testing.TB, q db.DBTX, organizationID, principalID string, o *WorkspaceOpts) db.Workspace {
	tb.Helper()
	if o == nil {
		o = &WorkspaceOpts{}
	}
	row, err := db.New().WorkspaceInsert(context.Background(), q, db.WorkspaceInsertParams{
		ID: or(o.ID, id.New(id.Workspace)), OrganizationID: organizationID, Name: or(o.Name, "other"), CreatedByID: principalID,
	})
	if err != nil {
		tb.Fatalf("testfactory: workspace: %v", err)
	}
	return row
}

// ProviderOpts describes a provider. Stored values are written as given:
// a credential or extra headers must be sealed already (secret.Seal with
// the provider's id, which ID then has to be).
type ProviderOpts struct {
	ID               string          // default: a new provider id
	Kind             string          // default: "model"
	Type             string          // default: "openai_compatible" for a model provider, "local" for an environment one
	Name             string          // default: Type
	Config           json.RawMessage // default: {}
	Credential       []byte          // sealed
	ExtraHeaders     []byte          // sealed; needs ExtraHeaderNames
	ExtraHeaderNames []string
	Disabled         bool
}

// Provider writes a provider of o's workspace as if created through the
// API (without its validation against the type's schema).
func Provider(tb testing.TB, q db.DBTX, o Owner, opts *ProviderOpts) db.Provider {
	tb.Helper()
	o.check(tb, "a provider")
	if opts == nil {
		opts = &ProviderOpts{}
	}
	kind := or(opts.Kind, "model")
	typ := opts.Type
	if typ == "" {
		switch kind {
		case "model":
			typ = "openai_compatible"
		case "environment":
			typ = "local"
		default:
			tb.Fatalf("testfactory: a %s provider needs a Type", kind)
		}
	}
	row, err := db.New().ProviderInsert(context.Background(), q, db.ProviderInsertParams{
		ID: or(opts.ID, id.New(id.Provider)), WorkspaceID: o.WorkspaceID, Kind: kind, Type: typ, Name: or(opts.Name, typ),
		Config: orJSON(opts.Config), Credential: opts.Credential, ExtraHeaders: opts.ExtraHeaders,
		ExtraHeaderNames: orEmpty(opts.ExtraHeaderNames), CreatedByID: o.PrincipalID,
	})
	if err != nil {
		tb.Fatalf("testfactory: provider: %v", err)
	}
	if opts.Disabled {
		// The API creates providers enabled and disables them by a PATCH.
		if err := q.QueryRow(context.Background(), `UPDATE provider SET enabled = false WHERE id = $1 RETURNING enabled`, row.ID).Scan(&row.Enabled); err != nil {
			tb.Fatalf("testfactory: disable provider: %v", err)
		}
	}
	return row
}

// ModelOpts describes a model.
type ModelOpts struct {
	Key string // default: "main"
	// ProviderID is the model's provider; default: a new model provider
	// made with Provider (nil: ProviderOpts' defaults).
	ProviderID string
	Provider   *ProviderOpts
	API        string          // default: "chat_completions"
	Model      string          // default: "gpt-5"
	Settings   json.RawMessage // default: {}
	Disabled   bool
}

// Model writes a model of o's workspace.
func Model(tb testing.TB, q db.DBTX, o Owner, opts *ModelOpts) db.Model {
	tb.Helper()
	o.check(tb, "a model")
	if opts == nil {
		opts = &ModelOpts{}
	}
	prv := opts.ProviderID
	if prv == "" {
		prv = Provider(tb, q, o, opts.Provider).ID
	}
	row, err := db.New().ModelInsert(context.Background(), q, db.ModelInsertParams{
		WorkspaceID: o.WorkspaceID, Key: or(opts.Key, "main"), ProviderID: prv, Api: or(opts.API, "chat_completions"),
		Model: or(opts.Model, "gpt-5"), Settings: orJSON(opts.Settings), Enabled: !opts.Disabled, CreatedByID: o.PrincipalID,
	})
	if err != nil {
		tb.Fatalf("testfactory: model: %v", err)
	}
	return row
}

// AgentOpts describes an agent.
type AgentOpts struct {
	Name string // default: a unique name
	// Config is revision 1's configuration, stored as given: the agent
	// service's normalization and reference checks are not applied, so a
	// test can hold a configuration the API would refuse. Default:
	// {"model":"main"}.
	Config json.RawMessage
}

// Agent writes an agent head of o's workspace with its revision 1, the
// default; the head's DefaultRevisionID names the revision. The two rows
// name each other, so they are written in one transaction of q (a
// savepoint when q is a transaction).
func Agent(tb testing.TB, q Beginner, o Owner, opts *AgentOpts) db.Head {
	tb.Helper()
	o.check(tb, "an agent")
	if opts == nil {
		opts = &AgentOpts{}
	}
	ctx := context.Background()
	tx, err := q.Begin(ctx)
	if err != nil {
		tb.Fatalf("testfactory: agent: %v", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	headID, revID := id.New("ap"), id.New("rev")
	head, err := db.New().HeadInsert(ctx, tx, db.HeadInsertParams{
		ID: headID, WorkspaceID: o.WorkspaceID, Kind: "agent", Name: or(opts.Name, "agent-"+headID[3:]),
		Labels: json.RawMessage(`{}`), DefaultRevisionID: revID, CreatedByID: o.PrincipalID,
	})
	if err != nil {
		tb.Fatalf("testfactory: agent: %v", err)
	}
	cfg := opts.Config
	if len(cfg) == 0 {
		cfg = json.RawMessage(`{"model":"main"}`)
	}
	// The hash is not the content's: no publish compares it with another.
	if _, err := db.New().RevisionInsert(ctx, tx, db.RevisionInsertParams{
		ID: revID, HeadID: headID, Number: 1, Config: cfg, ContentHash: "sha256:" + zeros64, CreatedByID: o.PrincipalID,
	}); err != nil {
		tb.Fatalf("testfactory: agent revision: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		tb.Fatalf("testfactory: agent: %v", err)
	}
	return head
}

// Beginner is a pool or a transaction: what starts a transaction.
type Beginner interface {
	db.DBTX
	Begin(ctx context.Context) (pgx.Tx, error)
}

const zeros64 = "0000000000000000000000000000000000000000000000000000000000000000"

// EnvironmentTemplateOpts describes an environment template.
type EnvironmentTemplateOpts struct {
	// ProviderID is the template's environment provider; default: a new
	// one made with Provider (Kind "environment"; Provider's other
	// members as given).
	ProviderID string
	Provider   *ProviderOpts
	Name       string          // default: "dev"
	Config     json.RawMessage // default: {}
	// Thresholds in seconds; 0: never.
	IdleStopSeconds   int32
	IdleDeleteSeconds int32
	Disabled          bool
}

// EnvironmentTemplate writes an environment template of o's workspace.
func EnvironmentTemplate(tb testing.TB, q db.DBTX, o Owner, opts *EnvironmentTemplateOpts) db.EnvironmentTemplate {
	tb.Helper()
	o.check(tb, "an environment template")
	if opts == nil {
		opts = &EnvironmentTemplateOpts{}
	}
	prv := opts.ProviderID
	if prv == "" {
		po := ProviderOpts{}
		if opts.Provider != nil {
			po = *opts.Provider
		}
		po.Kind = "environment"
		prv = Provider(tb, q, o, &po).ID
	}
	row, err := db.New().EnvironmentTemplateInsert(context.Background(), q, db.EnvironmentTemplateInsertParams{
		ID: id.New(id.EnvironmentTemplate), WorkspaceID: o.WorkspaceID, ProviderID: prv, Name: or(opts.Name, "dev"),
		Config: orJSON(opts.Config), IdleStopSeconds: nonZero(opts.IdleStopSeconds), IdleDeleteSeconds: nonZero(opts.IdleDeleteSeconds),
		Labels: json.RawMessage(`{}`), Enabled: !opts.Disabled, CreatedByID: o.PrincipalID,
	})
	if err != nil {
		tb.Fatalf("testfactory: environment template: %v", err)
	}
	return row
}

// EnvironmentOpts describes an environment, in any status: the state a run
// and the maintain_environments sweep would have left.
type EnvironmentOpts struct {
	// TemplateID is required; ProviderID defaults to the template's.
	TemplateID string
	ProviderID string
	Status     string // default: "running"
	// VendorHandle is the stored handle column, as given (the runtime seals
	// it; see environment.Runtime).
	VendorHandle json.RawMessage
	LastUsedAt   *time.Time
	ThreadID     *string
}

// Environment writes an environment of o's workspace.
func Environment(tb testing.TB, q db.DBTX, o Owner, opts *EnvironmentOpts) db.Environment {
	tb.Helper()
	o.check(tb, "an environment")
	if opts == nil || opts.TemplateID == "" {
		tb.Fatalf("testfactory: an environment needs a TemplateID")
	}
	ctx := context.Background()
	prv := opts.ProviderID
	if prv == "" {
		tpl, err := db.New().EnvironmentTemplateGet(ctx, q, db.EnvironmentTemplateGetParams{WorkspaceID: o.WorkspaceID, ID: opts.TemplateID})
		if err != nil {
			tb.Fatalf("testfactory: environment template %s: %v", opts.TemplateID, err)
		}
		prv = tpl.ProviderID
	}
	var handle []byte
	if len(opts.VendorHandle) > 0 {
		handle = opts.VendorHandle
	}
	// No query writes an environment in a chosen status: runs make them
	// starting and move them on.
	envID := id.New(id.Environment)
	_, err := q.Exec(ctx, `INSERT INTO environment (id, workspace_id, template_id, provider_id, status, vendor_handle,
		last_used_at, thread_id, created_by_id, updated_by_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)`,
		envID, o.WorkspaceID, opts.TemplateID, prv, or(opts.Status, "running"), handle,
		opts.LastUsedAt, opts.ThreadID, o.PrincipalID)
	if err != nil {
		tb.Fatalf("testfactory: environment: %v", err)
	}
	row, err := db.New().EnvironmentGet(ctx, q, db.EnvironmentGetParams{WorkspaceID: o.WorkspaceID, ID: envID})
	if err != nil {
		tb.Fatalf("testfactory: environment: %v", err)
	}
	return row
}

// SubscriptionOpts describes a webhook subscription.
type SubscriptionOpts struct {
	ID         string   // default: a new subscription id
	URL        string   // default: "https://example.com/hook"
	EventTypes []string // default: every run event
	// Secret is the stored secret column, as given (sealed with the
	// subscription's id, which ID then has to be). Default: a value no key
	// opens.
	Secret   []byte
	Disabled bool
}

// Subscription writes a subscription of o's workspace.
func Subscription(tb testing.TB, q db.DBTX, o Owner, opts *SubscriptionOpts) db.Subscription {
	tb.Helper()
	o.check(tb, "a subscription")
	if opts == nil {
		opts = &SubscriptionOpts{}
	}
	types := opts.EventTypes
	if len(types) == 0 {
		types = []string{"run.accepted", "run.cancelled", "run.failed", "run.started", "run.succeeded"}
	}
	secret := opts.Secret
	if secret == nil {
		secret = []byte{0}
	}
	row, err := db.New().SubscriptionInsert(context.Background(), q, db.SubscriptionInsertParams{
		ID: or(opts.ID, id.New(id.Subscription)), WorkspaceID: o.WorkspaceID, Url: or(opts.URL, "https://example.com/hook"),
		EventTypes: types, Enabled: !opts.Disabled, Secret: secret, CreatedByID: o.PrincipalID,
	})
	if err != nil {
		tb.Fatalf("testfactory: subscription: %v", err)
	}
	return row
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func orJSON(v json.RawMessage) json.RawMessage {
	if len(v) == 0 {
		return json.RawMessage(`{}`)
	}
	return v
}

func nonZero(v int32) *int32 {
	if v == 0 {
		return nil
	}
	return &v
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// MemoryRecord writes a record of a record memory of o's workspace, as the
// memory tool of a run stores one, and returns its id.
func MemoryRecord(tb testing.TB, q db.DBTX, o Owner, memoryID, content string) string {
	tb.Helper()
	recID := id.New("mrec")
	err := db.New().MemoryRecordInsert(context.Background(), q, db.MemoryRecordInsertParams{
		ID: recID, WorkspaceID: o.WorkspaceID, MemoryID: memoryID, Content: content, Metadata: json.RawMessage(`{}`),
	})
	if err != nil {
		tb.Fatalf("testfactory: memory record: %v", err)
	}
	return recID
}
