package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/agent"
	"github.com/svcdev/svc/internal/agentloop"
	"github.com/svcdev/svc/internal/checkpoint"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/llm"
	"github.com/svcdev/svc/internal/objectstore"
	"github.com/svcdev/svc/internal/provider/types"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/secret"
	"github.com/svcdev/svc/internal/skill"
	"github.com/svcdev/svc/internal/tool"
)

// MaxCheckpointBytes bounds a checkpoint object.
const MaxCheckpointBytes = 64 << 20

// RunContext is what toolsets are built from: the run and its agent's
// configuration.
type RunContext struct {
	Run    run.Run
	Lease  run.Lease
	Config agent.Config
	// closers run when the attempt ends.
	closers *[]func()
}

// OnClose registers fn to run when the attempt ends (an environment
// instance to close, say).
func (rc RunContext) OnClose(fn func()) { *rc.closers = append(*rc.closers, fn) }

// Toolset builds tools of one kind (web, environment, memories...) for a
// run; it answers none when the agent's configuration asks for none.
type Toolset func(ctx context.Context, rc RunContext) ([]tool.Tool, error)

// PromptSection writes a part of a run's system prompt, after the agent's
// and its skills' instructions (the memories' context, say), from what the
// run is asked (input, its last user message); "" adds nothing. It is
// written again at each attempt.
type PromptSection func(ctx context.Context, rc RunContext, input string) (string, error)

// ExecutorDeps are what the executor reads and calls.
type ExecutorDeps struct {
	Pool    *pgxpool.Pool
	Runs    *run.Service
	Keyring *keyring.Ring
	Objects objectstore.Store
	Types   *types.Registry
	// HTTPClient is the endpoint policy's guarded client (timeout 0) that
	// model calls go through.
	HTTPClient *http.Client
	Toolsets   []Toolset
	Prompts    []PromptSection
	Log        *slog.Logger
	// DeltaInterval is how often streamed text is written as message.delta
	// events (0: 50 ms).
	DeltaInterval time.Duration
	// Clock is the worker's clock (nil: time.Now). It measures only spans of
	// time: what a run's time limit leaves comes from the database.
	Clock func() time.Time
	// MaxOutputBytes bounds one model answer and MaxToolArgumentBytes one
	// tool call's arguments (limits.model_output_bytes and
	// limits.tool_arguments_bytes; 0: the llm package's defaults).
	MaxOutputBytes       int
	MaxToolArgumentBytes int
}

// Executor runs one attempt of a run: it loads the run's configuration and
// its last checkpoint, and runs the agent loop with a host that streams,
// checkpoints and records each step under the attempt's fence.
type Executor struct {
	d ExecutorDeps
	q *db.Queries
}

// NewExecutor returns an executor.
func NewExecutor(d ExecutorDeps) *Executor {
	if d.DeltaInterval <= 0 {
		d.DeltaInterval = 50 * time.Millisecond
	}
	if d.Clock == nil {
		d.Clock = time.Now
	}
	return &Executor{d: d, q: db.New()}
}

// now reads the worker's clock.
func (e *Executor) now() time.Time { return e.d.Clock() }

// HTTPClient is the client model calls go through.
func (e *Executor) HTTPClient() *http.Client { return e.d.HTTPClient }

// Execute runs the attempt a until its run ends or it must stop.
func (e *Executor) Execute(ctx context.Context, a *attempt) (agentloop.Outcome, error) {
	var closers []func()
	defer func() {
		for _, fn := range closers {
			fn()
		}
	}()
	spec, state, err := e.prepare(ctx, a.c, &closers)
	if err != nil {
		return agentloop.Outcome{}, err
	}
	h := newHost(e, a)
	defer h.close()
	return agentloop.Run(ctx, spec, state, h)
}

// prepare loads what the run uses, as it is now: its pinned revision's
// configuration, the model and its provider (which must still be enabled),
// the skills' instructions, the tools, and the state to continue from.
func (e *Executor) prepare(ctx context.Context, c run.Claimed, closers *[]func()) (agentloop.Spec, agentloop.State, error) {
	r := c.Run
	rev, err := e.q.RevisionGetOfHead(ctx, e.d.Pool, db.RevisionGetOfHeadParams{HeadID: r.AgentID, ID: r.RevisionID})
	if err != nil {
		return agentloop.Spec{}, agentloop.State{}, fmt.Errorf("read the agent's revision: %w", err)
	}
	var cfg agent.Config
	if err := json.Unmarshal(rev.Config, &cfg); err != nil {
		return agentloop.Spec{}, agentloop.State{}, fmt.Errorf("decode the agent's configuration: %w", err)
	}
	model, name, err := e.model(ctx, r.WorkspaceID, r.ModelKey)
	if err != nil {
		return agentloop.Spec{}, agentloop.State{}, err
	}
	system, err := e.system(ctx, r, cfg)
	if err != nil {
		return agentloop.Spec{}, agentloop.State{}, err
	}
	rc := RunContext{Run: r, Lease: c.Lease, Config: cfg, closers: closers}
	var tools []tool.Tool
	for _, ts := range e.d.Toolsets {
		more, err := ts(ctx, rc)
		if err != nil {
			return agentloop.Spec{}, agentloop.State{}, err
		}
		tools = append(tools, more...)
	}
	state, err := e.state(ctx, c)
	if err != nil {
		return agentloop.Spec{}, agentloop.State{}, err
	}
	input := lastUserText(state.Messages)
	for _, p := range e.d.Prompts {
		if state.Ended != nil {
			// The run has its answer; no model call is left to prompt.
			break
		}
		part, err := p(ctx, rc, input)
		if err != nil {
			return agentloop.Spec{}, agentloop.State{}, err
		}
		if part != "" && system != "" {
			system += "\n\n"
		}
		system += part
	}
	// The time limit counts from the run's start by the database's clock
	// (run.Claimed.Elapsed); the worker's own clock only measures what is
	// left of it.
	deadline := e.now().Add(time.Duration(cfg.Limits.TimeoutSeconds)*time.Second - c.Elapsed)
	spec := agentloop.Spec{
		Model: model, ModelName: name, System: system, Tools: tools,
		Limits: agentloop.Limits{
			MaxSteps: cfg.Limits.MaxSteps, MaxTokens: int64(cfg.Limits.MaxTokens),
			Deadline: deadline, Now: e.now,
		},
		MaxOutputBytes: e.d.MaxOutputBytes, MaxToolArgumentBytes: e.d.MaxToolArgumentBytes,
	}
	return spec, state, nil
}

// model opens the run's model: its row and its provider as they are now.
// A model or provider disabled since the run was accepted fails the run.
func (e *Executor) model(ctx context.Context, workspaceID, key string) (llm.Model, string, error) {
	m, err := e.q.ModelGet(ctx, e.d.Pool, db.ModelGetParams{WorkspaceID: workspaceID, Key: key})
	if dbx.IsNotFound(err) {
		return nil, "", failRun(run.ErrCodeDisabled, fmt.Sprintf("the model %q no longer exists", key))
	}
	if err != nil {
		return nil, "", fmt.Errorf("read model %s: %w", key, err)
	}
	if !m.Enabled {
		return nil, "", failRun(run.ErrCodeDisabled, fmt.Sprintf("the model %q is disabled", key))
	}
	p, err := e.q.ProviderGet(ctx, e.d.Pool, db.ProviderGetParams{WorkspaceID: workspaceID, Kind: string(types.KindModel), ID: m.ProviderID})
	if err != nil {
		return nil, "", fmt.Errorf("read the model's provider: %w", err)
	}
	if !p.Enabled {
		return nil, "", failRun(run.ErrCodeDisabled, fmt.Sprintf("the provider of model %q is disabled", key))
	}
	var cred, headers map[string]string
	if err := secret.Open(e.d.Keyring, p.ID, p.Credential, &cred); err != nil {
		return nil, "", fmt.Errorf("open the credential of provider %s: %w", p.ID, err)
	}
	if err := secret.Open(e.d.Keyring, p.ID, p.ExtraHeaders, &headers); err != nil {
		return nil, "", fmt.Errorf("open the extra headers of provider %s: %w", p.ID, err)
	}
	var credJSON json.RawMessage
	if cred != nil {
		if credJSON, err = json.Marshal(cred); err != nil {
			return nil, "", err
		}
	}
	model, err := llm.ForProvider(llm.ProviderSpec{
		Type: p.Type, API: m.Api, Config: p.Config, Credential: credJSON, Headers: headers,
		HTTPClient: e.d.HTTPClient, Registry: e.d.Types,
	})
	if err != nil {
		return nil, "", failRun(run.ErrCodeModel, fmt.Sprintf("model %q cannot be called: %v", key, err))
	}
	return settingsModel{Model: model, settings: m.Settings}, m.Model, nil
}

// settingsModel sends a model's settings with every request.
type settingsModel struct {
	llm.Model
	settings json.RawMessage
}

func (m settingsModel) Stream(ctx context.Context, req llm.Request, fn func(llm.Event) error) (llm.Response, error) {
	req.Settings = m.settings
	return m.Model.Stream(ctx, req, fn)
}

// system is the system prompt: the agent's instructions, then each skill's.
func (e *Executor) system(ctx context.Context, r run.Run, cfg agent.Config) (string, error) {
	var b strings.Builder
	b.WriteString(cfg.Instructions)
	for _, sr := range r.SkillRevisions {
		head, err := e.q.HeadGet(ctx, e.d.Pool, db.HeadGetParams{WorkspaceID: r.WorkspaceID, Kind: "skill", ID: sr.SkillID})
		if err != nil {
			return "", fmt.Errorf("read skill %s: %w", sr.SkillID, err)
		}
		rev, err := e.q.RevisionGetOfHead(ctx, e.d.Pool, db.RevisionGetOfHeadParams{HeadID: sr.SkillID, ID: sr.RevisionID})
		if err != nil {
			return "", fmt.Errorf("read skill revision %s: %w", sr.RevisionID, err)
		}
		var sc skill.Config
		if err := json.Unmarshal(rev.Config, &sc); err != nil {
			return "", fmt.Errorf("decode skill revision %s: %w", sr.RevisionID, err)
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "## Skill: %s\n\n%s", head.Name, sc.Instructions)
	}
	return b.String(), nil
}

// lastUserText is the text of the last user message of msgs: the run's
// input, since a run adds only assistant and tool messages.
func lastUserText(msgs []llm.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleUser {
			return msgs[i].Text
		}
	}
	return ""
}

// checkpointDoc is a checkpoint object.
type checkpointDoc struct {
	Version int             `json:"version"`
	RunID   string          `json:"run_id"`
	Attempt int32           `json:"attempt"`
	State   agentloop.State `json:"state"`
}

// state is where the attempt starts: the last checkpoint, or, for a run
// with none, the thread's conversation up to the run's input.
func (e *Executor) state(ctx context.Context, c run.Claimed) (agentloop.State, error) {
	if c.CheckpointKey != nil {
		rd, err := e.d.Objects.Get(ctx, *c.CheckpointKey, 0, -1)
		if err != nil {
			return agentloop.State{}, fmt.Errorf("read checkpoint %s: %w", *c.CheckpointKey, err)
		}
		defer func() { _ = rd.Close() }()
		var doc checkpointDoc
		if err := json.NewDecoder(io.LimitReader(rd, MaxCheckpointBytes)).Decode(&doc); err != nil {
			return agentloop.State{}, fmt.Errorf("decode checkpoint %s: %w", *c.CheckpointKey, err)
		}
		if doc.RunID != c.Lease.RunID {
			return agentloop.State{}, fmt.Errorf("checkpoint %s belongs to run %s", *c.CheckpointKey, doc.RunID)
		}
		return doc.State, nil
	}
	rows, err := e.q.MessageHistory(ctx, e.d.Pool, c.Lease.ThreadID)
	if err != nil {
		return agentloop.State{}, fmt.Errorf("read the thread's messages: %w", err)
	}
	st := agentloop.State{Messages: make([]llm.Message, 0, len(rows))}
	for _, m := range rows {
		msg := llm.Message{Role: llm.Role(m.Role), Text: m.Content, IsError: m.IsError}
		if m.ToolCallID != nil {
			msg.ToolCallID = *m.ToolCallID
		}
		var calls []run.ToolCall
		if err := json.Unmarshal(m.ToolCalls, &calls); err != nil {
			return agentloop.State{}, fmt.Errorf("decode the thread's message %d: %w", m.Position, err)
		}
		for _, tc := range calls {
			msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
		}
		st.Messages = append(st.Messages, msg)
	}
	return st, nil
}

// saveCheckpoint writes the state after a step and answers its key. The key
// names the attempt, so an attempt that lost its lease never overwrites an
// object its successor recorded. A write that failed answers the key too
// (the object may exist all the same); "" when nothing was written.
func (e *Executor) saveCheckpoint(ctx context.Context, l run.Lease, st agentloop.State) (string, error) {
	key, err := checkpoint.Key(l.WorkspaceID, l.RunID, checkpoint.AttemptName(l.Number, int32(st.Step)))
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(checkpointDoc{Version: 1, RunID: l.RunID, Attempt: l.Number, State: st})
	if err != nil {
		return "", fmt.Errorf("encode checkpoint: %w", err)
	}
	if _, err := e.d.Objects.Put(ctx, key, bytes.NewReader(b), int64(len(b)), objectstore.PutOptions{ContentType: "application/json"}); err != nil {
		return key, fmt.Errorf("write checkpoint: %w", err)
	}
	return key, nil
}
