package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/svcdev/svc/internal/agent"
	"github.com/svcdev/svc/internal/agentloop"
	"github.com/svcdev/svc/internal/checkpoint"
	"github.com/svcdev/svc/internal/contextfit"
	"github.com/svcdev/svc/internal/llm"
	"github.com/svcdev/svc/internal/model"
	"github.com/svcdev/svc/internal/objectstore"
	"github.com/svcdev/svc/internal/revision"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/skill"
	"github.com/svcdev/svc/internal/tool"
)

// ExecutorDeps are what the executor reads and calls.
type ExecutorDeps struct {
	Runs *run.Service
	// Agents answer the configuration of the agent revision a run pinned,
	// Skills its skills' instructions, and Models open its model.
	Agents *agent.Service
	Skills *skill.Service
	Models *model.Service
	// Objects hold the runs' checkpoints.
	Objects objectstore.Store
	// HTTPClient is the endpoint policy's guarded client (timeout 0) that
	// model calls go through.
	HTTPClient *http.Client
	Toolsets   []tool.Toolset
	Prompts    []tool.PromptSection
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
	// ApprovalTimeout is how long a call waits for a person when the
	// agent's tool policy does not say (worker.approval_timeout_seconds; 0:
	// agent.DefaultApprovalTimeoutSeconds).
	ApprovalTimeout time.Duration
	// ToolResultShare is the share of a model's context window one tool
	// result may take when sent (limits.tool_result_window_percent; 0:
	// contextfit.DefaultToolResultShare).
	ToolResultShare float64
	// ModelMetrics and ToolMetrics time and count the runs' model and
	// tool calls; nil counts nothing.
	ModelMetrics *llm.Metrics
	ToolMetrics  *tool.Metrics
	// Tracer, when set, makes spans of each step, model call and tool
	// call (tracing.go).
	Tracer trace.Tracer
}

// Executor runs one attempt of a run: it loads the run's configuration and
// its last checkpoint, and runs the agent loop with a host that streams,
// checkpoints and records each step under the attempt's fence.
type Executor struct {
	d ExecutorDeps
}

// NewExecutor returns an executor.
func NewExecutor(d ExecutorDeps) *Executor {
	if d.DeltaInterval <= 0 {
		d.DeltaInterval = 50 * time.Millisecond
	}
	if d.Clock == nil {
		d.Clock = time.Now
	}
	if d.ApprovalTimeout <= 0 {
		d.ApprovalTimeout = agent.DefaultApprovalTimeoutSeconds * time.Second
	}
	return &Executor{d: d}
}

// now reads the worker's clock.
func (e *Executor) now() time.Time { return e.d.Clock() }

// HTTPClient is the client model calls go through.
func (e *Executor) HTTPClient() *http.Client { return e.d.HTTPClient }

// Execute runs the attempt a until its run ends or it must stop.
func (e *Executor) Execute(ctx context.Context, a *attempt) (agentloop.Outcome, error) {
	spec, state, closeRun, err := e.prepare(ctx, a.c, a.log)
	defer closeRun()
	if err != nil {
		return agentloop.Outcome{}, err
	}
	h := newHost(e, a)
	h.terms = spec.Approval
	defer h.close()
	return agentloop.Run(ctx, spec, state, h)
}

// prepare loads what the run uses, as it is now: its pinned revision's
// configuration, the model and its provider (which must still be usable),
// the skills' instructions, the tools, and the state to continue from. The
// function it answers ends the attempt's run context (its toolsets' closers).
func (e *Executor) prepare(ctx context.Context, c run.Claimed, log *slog.Logger) (agentloop.Spec, agentloop.State, func(), error) {
	r := c.Run
	cfg, err := e.d.Agents.RunConfig(ctx, r.WorkspaceID, r.AgentID, r.RevisionID)
	if err != nil {
		return agentloop.Spec{}, agentloop.State{}, func() {}, fmt.Errorf("read the agent's revision: %w", err)
	}
	rc, closeRun := tool.NewRunContext(r, c.Lease, cfg)
	rc.Log = log
	spec, state, err := e.spec(ctx, c, rc)
	return spec, state, closeRun, err
}

// spec is prepare's work once the run context exists.
func (e *Executor) spec(ctx context.Context, c run.Claimed, rc tool.RunContext) (agentloop.Spec, agentloop.State, error) {
	r, cfg := c.Run, rc.Config
	m, err := e.model(ctx, r.WorkspaceID, r.ModelKey)
	if err != nil {
		return agentloop.Spec{}, agentloop.State{}, err
	}
	system, err := e.system(ctx, r, cfg)
	if err != nil {
		return agentloop.Spec{}, agentloop.State{}, err
	}
	var tools []tool.Tool
	for _, ts := range e.d.Toolsets {
		more, err := ts(ctx, rc)
		if err != nil {
			return agentloop.Spec{}, agentloop.State{}, err
		}
		tools = append(tools, more...)
	}
	tools = e.d.ToolMetrics.Instrument(tools)
	state, err := e.state(ctx, c, cfg)
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
	tools = traceTools(tools, e.d.Tracer)
	spec := agentloop.Spec{
		Model: traceModel(m.Model, e.d.Tracer, m.ProviderType), ModelName: m.Name, System: system, Tools: tools, Tracer: e.d.Tracer,
		Limits: agentloop.Limits{
			MaxSteps: cfg.Limits.MaxSteps, MaxTokens: int64(cfg.Limits.MaxTokens),
			Deadline: deadline, Now: e.now,
		},
		MaxOutputBytes: e.d.MaxOutputBytes, MaxToolArgumentBytes: e.d.MaxToolArgumentBytes,
		Context: contextPolicy(m, cfg, e.d.ToolResultShare),
	}
	spec.Policy, spec.Approval = toolPolicy(cfg.ToolPolicy, tools, e.d.ApprovalTimeout)
	return spec, state, nil
}

// toolPolicy is the agent's tool policy over the run's tools: the tools
// that ask for a person or are denied, by name, and the terms of a wait
// for a person (the deployment's timeout when the agent sets none).
func toolPolicy(p agent.ToolPolicy, tools []tool.Tool, timeout time.Duration) (map[string]string, agentloop.ApprovalTerms) {
	var held map[string]string
	for _, t := range tools {
		switch d := p.Decide(t.Def.Name, t.Toolset); d {
		case agent.PolicyAsk, agent.PolicyDeny:
			if held == nil {
				held = map[string]string{}
			}
			held[t.Def.Name] = d
		}
	}
	if p.ApprovalTimeoutSeconds != nil {
		timeout = time.Duration(*p.ApprovalTimeoutSeconds) * time.Second
	}
	return held, agentloop.ApprovalTerms{Timeout: timeout, OnTimeout: p.OnTimeoutOrDefault()}
}

// contextPolicy is how the run fits its conversation into the model's
// context window: the answer's reservation is the model's
// max_output_tokens, else llm.DefaultMaxOutputTokens or a quarter of the
// window, whichever is less.
func contextPolicy(m model.Opened, cfg agent.Config, share float64) contextfit.Policy {
	reserve := m.MaxOutputTokens
	if reserve <= 0 {
		reserve = min(llm.DefaultMaxOutputTokens, m.ContextWindow/4)
	}
	strategy := contextfit.Summarize
	if cfg.Context.Strategy == agent.ContextTruncate {
		strategy = contextfit.Truncate
	}
	return contextfit.Policy{Window: m.ContextWindow, Reserve: reserve, Strategy: strategy, ToolResultShare: share}
}

// model opens the run's model (model.Service.Open): a model that is not
// usable, or that its adapter refuses, fails the run.
func (e *Executor) model(ctx context.Context, workspaceID, key string) (model.Opened, error) {
	m, err := e.d.Models.Open(ctx, workspaceID, key, e.d.HTTPClient)
	if u, ok := errors.AsType[*model.Unusable](err); ok {
		return model.Opened{}, &run.Failure{Code: run.ErrCodeDisabled, Message: u.Error()}
	}
	if u, ok := errors.AsType[*model.Uncallable](err); ok {
		return model.Opened{}, &run.Failure{Code: run.ErrCodeModel, Message: u.Error()}
	}
	if err != nil {
		return model.Opened{}, err
	}
	m.Model = e.d.ModelMetrics.Instrument(m.Model, m.API, m.ProviderType)
	return m, nil
}

// system is the system prompt: the agent's instructions, then the skills'
// (skill.Service.Instructions).
func (e *Executor) system(ctx context.Context, r run.Run, cfg agent.Config) (string, error) {
	pins := make([]revision.Pin, len(r.SkillRevisions))
	for i, sr := range r.SkillRevisions {
		pins[i] = revision.Pin{HeadID: sr.SkillID, RevisionID: sr.RevisionID}
	}
	skills, err := e.d.Skills.Instructions(ctx, r.WorkspaceID, pins)
	if err != nil {
		return "", err
	}
	if cfg.Instructions != "" && skills != "" {
		return cfg.Instructions + "\n\n" + skills, nil
	}
	return cfg.Instructions + skills, nil
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

// state is where the attempt starts: the last checkpoint, or, for a run
// with none, the thread's conversation up to the run's input, with the
// thread's latest summary of its older messages (its newest
// context.compacted event) when the agent summarizes.
func (e *Executor) state(ctx context.Context, c run.Claimed, cfg agent.Config) (agentloop.State, error) {
	if c.CheckpointKey != nil {
		return checkpoint.Load[agentloop.State](ctx, e.d.Objects, *c.CheckpointKey, c.Lease.RunID)
	}
	history, err := e.d.Runs.History(ctx, c.Lease.ThreadID)
	if err != nil {
		return agentloop.State{}, err
	}
	st := agentloop.State{Messages: make([]llm.Message, 0, len(history))}
	for _, m := range history {
		msg := llm.Message{Role: llm.Role(m.Role), Text: m.Content, IsError: m.IsError}
		if m.ToolCallID != nil {
			msg.ToolCallID = *m.ToolCallID
		}
		for _, tc := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
		}
		st.Messages = append(st.Messages, msg)
	}
	if cfg.Context.Strategy == agent.ContextTruncate {
		return st, nil
	}
	d, ok, err := e.d.Runs.LatestCompaction(ctx, c.Lease.ThreadID)
	if err != nil || !ok {
		return st, err
	}
	keep := -1
	if d.KeptPosition != nil {
		keep = *d.KeptPosition - 1
	}
	if d.ThroughPosition <= len(st.Messages) {
		st.Summary = &contextfit.Summary{Text: d.Summary, Through: d.ThroughPosition, Keep: keep}
	}
	return st, nil
}

// saveCheckpoint writes the state after a step (checkpoint.Save) and
// answers its key; "" when nothing was written.
func (e *Executor) saveCheckpoint(ctx context.Context, l run.Lease, st agentloop.State) (string, error) {
	return checkpoint.Save(ctx, e.d.Objects, l.WorkspaceID, l.RunID, l.Number, int32(st.Step), st)
}
