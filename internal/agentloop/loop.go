// Package agentloop is what a run does: call the model with the
// instructions and the conversation, execute the tool calls it asks for,
// and repeat until it answers without tool calls or a limit ends the run.
// One step is one model call and the tool calls it asked for; after every
// step the host records a checkpoint, so a run that moves to another worker
// continues after its last recorded step.
//
// The loop knows nothing of the database, the object store or the stream:
// its Host does. That keeps the loop's rules (limits, ordering, what counts
// as a failure of the run and what is the model's to handle) in one place
// with its tests.
package agentloop

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/svcdev/svc/internal/contextfit"
	"github.com/svcdev/svc/internal/llm"
	"github.com/svcdev/svc/internal/tool"
)

// Limits bound a run (the agent's limits).
type Limits struct {
	MaxSteps  int
	MaxTokens int64
	// Deadline is when the run's time is up, on the clock Now reads.
	Deadline time.Time
	// Now is the clock Deadline is on (nil: time.Now).
	Now func() time.Time
}

func (l Limits) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// Spec is what one run calls: the model and its name at the vendor, the
// system instructions, the tools and the limits.
type Spec struct {
	Model     llm.Model
	ModelName string
	System    string
	Tools     []tool.Tool
	Limits    Limits
	// MaxOutputTokens bounds each model call (0: the model's own default).
	MaxOutputTokens int
	Temperature     *float64
	// MaxOutputBytes bounds what one model answer carries, and
	// MaxToolArgumentBytes one tool call's arguments (0: the llm package's
	// defaults; limits.model_output_bytes and limits.tool_arguments_bytes).
	// An answer that reaches one fails the run with CodeOutputLimit.
	MaxOutputBytes       int
	MaxToolArgumentBytes int
	// ToolParallelism bounds the tool calls of one step run at once (0: 4).
	ToolParallelism int
	// Context fits the conversation into the model's context window
	// before each model call (package contextfit); the zero value sends
	// it whole until the vendor refuses it as too long.
	Context contextfit.Policy
	// Policy maps a tool's name to PolicyAsk (a person approves each call
	// first) or PolicyDeny (never called; the model is told); a tool not
	// in it is called at once (the agent's tool policy).
	Policy map[string]string
	// Approval is what a call waiting for a person is bound by.
	Approval ApprovalTerms
	// Tracer, when set, makes a span of each step (tracing.go).
	Tracer trace.Tracer
}

// The decisions of a tool policy that hold a call back
// (agent.PolicyAsk and agent.PolicyDeny).
const (
	PolicyAsk  = "ask"
	PolicyDeny = "deny"
)

// ApprovalTerms bound the wait for a person's decision on a call: how
// long, and what the timeout does (agent.TimeoutDeny or TimeoutFail).
type ApprovalTerms struct {
	Timeout   time.Duration
	OnTimeout string
}

// Decision is a person's decision on a call that waited for one (or the
// timeout's, which denies it).
type Decision struct {
	Approved bool
	// Reason is what the model reads of a denied call.
	Reason string
}

// State is what a checkpoint holds: everything needed to continue the run.
type State struct {
	// Messages is the whole conversation the model sees: the thread's
	// history, the input, and what this run added so far.
	Messages []llm.Message `json:"messages"`
	// Step counts the steps done.
	Step int `json:"step"`
	// Usage counts the tokens of every model call of the run.
	Usage llm.Usage `json:"usage"`
	// Waiting is set while the run waits for answers to the last step's
	// calls (subagents); the step's tool messages are added once they came.
	Waiting *Waiting `json:"waiting,omitempty"`
	// Ended is set by the step that ended the run: a run resumed from that
	// step's checkpoint (its worker died before it could finish the run)
	// ends as it did, without asking the model again.
	Ended *Ending `json:"ended,omitempty"`
	// Summary replaces the conversation's older messages when it is sent
	// (contextfit.Summary); Calibration is the last model call's estimate
	// and the input tokens the vendor counted for it.
	Summary     *contextfit.Summary     `json:"summary,omitempty"`
	Calibration *contextfit.Calibration `json:"calibration,omitempty"`
}

// Ending is how the last step ended the run.
type Ending struct {
	// Final is the assistant's answer.
	Final string `json:"final"`
	// Failure is set when the answer does not count (the vendor filtered it).
	Failure *Failure `json:"failure,omitempty"`
}

// Waiting is a step whose calls are not all answered.
type Waiting struct {
	Calls []llm.ToolCall `json:"calls"`
	// Done holds the calls answered, by call id: at once, or once a person
	// approved them and they ran.
	Done map[string]llm.Message `json:"done"`
	// Approvals are the ids of the calls that wait for a person's decision
	// (the others wait for an answer: a subagent's).
	Approvals []string `json:"approvals,omitempty"`
}

// SuspendError asks the host to give the run back until the calls Calls
// are answered or decided on: not a failure. Approvals are those of Calls
// that wait for a person, under Terms.
type SuspendError struct {
	Calls     []string
	Approvals []llm.ToolCall
	Terms     ApprovalTerms
}

func (e *SuspendError) Error() string {
	return fmt.Sprintf("waiting for %d call(s) to be answered", len(e.Calls))
}

// StepRecord is a finished step for the host to record.
type StepRecord struct {
	// State is the run's state after the step: its checkpoint.
	State State
	// Assistant is the model's message; Results are the tool messages in the
	// order of the calls.
	Assistant llm.Message
	Results   []llm.Message
	// Final is set when the assistant answered without tool calls.
	Final bool
	// Waiting: the step is recorded without its tool messages, which come
	// when the run continues (Resumed, with Calls and Results only).
	// Waiting and Resumed both: calls a person approved ran while others
	// still wait; only the checkpoint is recorded.
	Waiting bool
	Resumed bool
	Calls   []llm.ToolCall
	// Approvals are the calls of a Waiting step that wait for a person.
	Approvals []llm.ToolCall
	// Compaction is set when the step's model call was preceded by a new
	// summary of the older conversation (State.Summary holds it).
	Compaction *contextfit.Compaction
}

// Host is what the loop reports to.
type Host interface {
	// Delta receives the text the model streams, as it comes.
	Delta(text string)
	// ToolCalls is told of a step's tool calls before they execute. It may
	// record them while the tools run: Step, which comes after, must record
	// them first.
	ToolCalls(ctx context.Context, calls []llm.ToolCall) error
	// Step records a finished step (the checkpoint, the messages, the
	// events). An error stops the run: the step is not recorded (a lost
	// lease, say) and the loop returns it.
	Step(ctx context.Context, rec StepRecord) error
	// Continue is asked between steps; false stops the loop with ErrStopped
	// after the last recorded step (a draining worker hands the run off).
	Continue() bool
	// Await reads the answers to calls that arrived (by call id).
	Await(ctx context.Context, calls []string) (map[string]tool.Result, error)
	// Decisions reads the decisions made on calls that waited for a
	// person (by call id); a call not yet decided is absent.
	Decisions(ctx context.Context, calls []string) (map[string]Decision, error)
}

// ErrStopped is returned when the host asked the loop to stop between steps.
var ErrStopped = errors.New("agentloop: stopped between steps")

// Outcome is how a run ended.
type Outcome struct {
	// Final is the assistant's last text when the run succeeded.
	Final string
	// Failure is set when the run failed for a reason of the run itself
	// (a limit, the model's refusal, a vendor error that retries did not
	// cure); nil when it succeeded.
	Failure *Failure
	State   State
}

// Failure is why a run failed, as users see it.
type Failure struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Cause is what the host logs under the run's id when Message is a
	// general sentence standing for it (an answer svc could not read).
	Cause error `json:"-"`
}

// Failure codes.
const (
	CodeLimit = "limit_exceeded"
	CodeModel = "model_error"
	// CodeOutputLimit: a model answer outgrew its bound; the stream was
	// stopped there and the model is not asked again.
	CodeOutputLimit = "output_limit"
)

// RetryLaterError asks the host to give the run back and retry after Delay
// (a vendor's long Retry-After): not a failure of the run.
type RetryLaterError struct {
	Delay time.Duration
	Err   error
}

func (e *RetryLaterError) Error() string {
	return fmt.Sprintf("retry after %s: %v", e.Delay, e.Err)
}
func (e *RetryLaterError) Unwrap() error { return e.Err }

// Run runs the loop from state until the run ends. It returns an Outcome
// when the run ended (succeeded or failed), and an error when it must stop
// without ending the run: ctx ended, the host refused a step, the host asked
// to stop (ErrStopped), or a *RetryLaterError.
func Run(ctx context.Context, spec Spec, state State, host Host) (out Outcome, err error) {
	steps := stepSpans{tracer: spec.Tracer}
	defer func() { steps.end(out, err) }()
	defs := make([]llm.Tool, len(spec.Tools))
	byName := make(map[string]tool.Tool, len(spec.Tools))
	for i, t := range spec.Tools {
		defs[i] = t.Def
		byName[t.Def.Name] = t
	}
	if e := state.Ended; e != nil {
		return Outcome{Final: e.Final, Failure: e.Failure, State: state}, nil
	}
	if state.Waiting != nil {
		var err error
		state, err = resume(steps.start(ctx, state.Step, true), spec, byName, state, host)
		if errors.Is(err, errTimeUp) {
			return Outcome{Failure: &Failure{Code: CodeLimit, Message: "the run reached its time limit"}, State: state}, nil
		}
		if err != nil {
			return Outcome{State: state}, err
		}
	}
	for {
		steps.end(Outcome{}, nil)
		if f := limitReached(spec.Limits, state); f != nil {
			return Outcome{Failure: f, State: state}, nil
		}
		if !host.Continue() {
			return Outcome{State: state}, ErrStopped
		}
		ctx := steps.start(ctx, state.Step+1, false)
		callCtx, cancel := spec.Limits.withDeadline(ctx)
		resp, compaction, err := callModel(callCtx, &spec, &state, defs, host)
		timedOut := errors.Is(callCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return Outcome{State: state}, context.Cause(ctx)
			}
			if timedOut {
				return Outcome{Failure: &Failure{Code: CodeLimit, Message: "the run reached its time limit"}, State: state}, nil
			}
			var ol *llm.OutputLimitError
			if errors.As(err, &ol) {
				return Outcome{Failure: outputLimit(ol), State: state}, nil
			}
			var le *llm.Error
			if errors.As(err, &le) && le.RetryAfter > 0 {
				return Outcome{State: state}, &RetryLaterError{Delay: le.RetryAfter, Err: err}
			}
			return Outcome{Failure: modelFailure(err), State: state}, nil
		}
		state.Usage.InputTokens += resp.Usage.InputTokens
		state.Usage.OutputTokens += resp.Usage.OutputTokens
		assistant := resp.Message
		assistant.Role = llm.RoleAssistant
		state.Messages = append(state.Messages, assistant)
		state.Step++
		rec := StepRecord{Assistant: assistant, Final: len(assistant.ToolCalls) == 0, Compaction: compaction}
		var waiting []string
		var asked []llm.ToolCall
		if !rec.Final {
			results, err := runTools(ctx, spec, byName, assistant.ToolCalls, host)
			if errors.Is(err, errTimeUp) {
				return Outcome{Failure: &Failure{Code: CodeLimit, Message: "the run reached its time limit"}, State: state}, nil
			}
			if err != nil {
				return Outcome{State: state}, err
			}
			done := map[string]llm.Message{}
			msgs := make([]llm.Message, len(results))
			for i, r := range results {
				c := assistant.ToolCalls[i]
				msgs[i] = llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Text: r.Text, IsError: r.IsError}
				switch {
				case r.Pending && spec.Policy[c.Name] == PolicyAsk:
					asked = append(asked, c)
					waiting = append(waiting, c.ID)
				case r.Pending:
					waiting = append(waiting, c.ID)
				default:
					done[c.ID] = msgs[i]
				}
			}
			if len(waiting) > 0 {
				state.Waiting = &Waiting{Calls: assistant.ToolCalls, Done: done, Approvals: callIDs(asked)}
				rec.Waiting, rec.Approvals = true, asked
			} else {
				rec.Results = msgs
				state.Messages = append(state.Messages, msgs...)
			}
		}
		if rec.Final {
			state.Ended = &Ending{Final: assistant.Text}
			if resp.FinishReason == llm.FinishContentFilter {
				state.Ended.Failure = &Failure{Code: CodeModel, Message: "the model's vendor filtered the answer"}
			}
		}
		rec.State = state
		if err := host.Step(ctx, rec); err != nil {
			return Outcome{State: state}, err
		}
		if len(waiting) > 0 {
			return Outcome{State: state}, &SuspendError{Calls: waiting, Approvals: asked, Terms: spec.Approval}
		}
		if e := state.Ended; e != nil {
			return Outcome{Final: e.Final, Failure: e.Failure, State: state}, nil
		}
	}
}

// callModel makes a step's model call: the conversation fitted into the
// window first (contextfit.Fit, whose summarizing call counts in the
// run's usage), and, when the vendor refuses it as longer than the window
// all the same, fitted again with the vendor's numbers and sent once more.
// It answers the compaction the step made, if any.
func callModel(ctx context.Context, spec *Spec, state *State, defs []llm.Tool, host Host) (llm.Response, *contextfit.Compaction, error) {
	summarize := func(ctx context.Context, req llm.Request) (llm.Response, error) {
		req.Model, req.Temperature = spec.ModelName, spec.Temperature
		req.MaxOutputBytes, req.MaxToolArgumentBytes = spec.MaxOutputBytes, spec.MaxToolArgumentBytes
		resp, err := spec.Model.Stream(ctx, req, func(llm.Event) error { return nil })
		state.Usage.InputTokens += resp.Usage.InputTokens
		state.Usage.OutputTokens += resp.Usage.OutputTokens
		return resp, err
	}
	var compaction *contextfit.Compaction
	for try := 0; ; try++ {
		fit, err := contextfit.Fit(ctx, spec.Context, contextfit.Input{System: spec.System, Tools: defs, Messages: state.Messages,
			Summary: state.Summary, Calibration: state.Calibration, Force: try > 0}, summarize)
		if err != nil {
			return llm.Response{}, compaction, err
		}
		if fit.Compaction != nil {
			compaction, state.Summary = fit.Compaction, fit.Summary
		}
		resp, err := spec.Model.Stream(ctx, llm.Request{
			Model: spec.ModelName, System: fit.System, Messages: fit.Messages, Tools: defs,
			MaxOutputTokens: spec.MaxOutputTokens, Temperature: spec.Temperature,
			MaxOutputBytes: spec.MaxOutputBytes, MaxToolArgumentBytes: spec.MaxToolArgumentBytes,
		}, func(e llm.Event) error {
			if e.Kind == llm.EventTextDelta && e.Text != "" {
				host.Delta(e.Text)
			}
			return nil
		})
		var cl *llm.ContextLengthError
		if err == nil || try > 0 || !errors.As(err, &cl) || ctx.Err() != nil {
			if err == nil && fit.Estimate > 0 && resp.Usage.InputTokens > 0 {
				state.Calibration = &contextfit.Calibration{Estimated: fit.Estimate, Reported: resp.Usage.InputTokens}
			}
			return resp, compaction, err
		}
		// The vendor's numbers, when it gave them, replace the estimate's.
		estimate := fit.Estimate
		if estimate == 0 {
			estimate = contextfit.RequestOverhead + contextfit.TextTokens(fit.System) + contextfit.ToolsTokens(defs)
			for i := range fit.Messages {
				estimate += contextfit.MessageTokens(&fit.Messages[i])
			}
		}
		if cl.Tokens > 0 {
			state.Calibration = &contextfit.Calibration{Estimated: estimate, Reported: cl.Tokens}
		}
		if cl.Limit > 0 && (spec.Context.Window <= 0 || cl.Limit < spec.Context.Window) {
			spec.Context.Window = cl.Limit
		}
		if spec.Context.Window <= 0 {
			spec.Context.Window = int(float64(estimate) * state.Calibration.Factor() * 3 / 4)
		}
		if spec.Context.Reserve <= 0 {
			spec.Context.Reserve = min(llm.DefaultMaxOutputTokens, spec.Context.Window/4)
		}
		if spec.Context.Strategy == "" {
			spec.Context.Strategy = contextfit.Summarize
		}
	}
}

// resume adds the answers of a waiting step's calls, in call order, and
// records them. Calls that waited for a person run once approved and are
// answered with the reason once denied. A call still unanswered or
// undecided suspends the run again; calls approved meanwhile ran, and the
// checkpoint records their answers first, so they do not run again.
func resume(ctx context.Context, spec Spec, byName map[string]tool.Tool, state State, host Host) (State, error) {
	w := state.Waiting
	asks := map[string]bool{}
	for _, id := range w.Approvals {
		asks[id] = true
	}
	var answers, decisions []string
	for _, c := range w.Calls {
		if _, ok := w.Done[c.ID]; ok {
			continue
		}
		if asks[c.ID] {
			decisions = append(decisions, c.ID)
		} else {
			answers = append(answers, c.ID)
		}
	}
	got := map[string]tool.Result{}
	if len(answers) > 0 {
		var err error
		if got, err = host.Await(ctx, answers); err != nil {
			return state, err
		}
	}
	decided := map[string]Decision{}
	if len(decisions) > 0 {
		var err error
		if decided, err = host.Decisions(ctx, decisions); err != nil {
			return state, err
		}
	}
	if w.Done == nil {
		w.Done = map[string]llm.Message{}
	}
	var approved []llm.ToolCall
	var undecided []llm.ToolCall
	for _, c := range w.Calls {
		if !asks[c.ID] {
			continue
		}
		d, ok := decided[c.ID]
		switch {
		case !ok:
			undecided = append(undecided, c)
		case d.Approved:
			approved = append(approved, c)
		default:
			w.Done[c.ID] = llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Text: d.Reason, IsError: true}
		}
	}
	w.Approvals = callIDs(undecided)
	var missing []string
	if len(approved) > 0 {
		results, err := execCalls(ctx, spec, byName, approved, true)
		if err != nil {
			return state, err
		}
		for i, r := range results {
			c := approved[i]
			if r.Pending {
				// An approved subagent call: its answer comes later.
				missing = append(missing, c.ID)
				continue
			}
			w.Done[c.ID] = llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Text: r.Text, IsError: r.IsError}
		}
	}
	for _, id := range answers {
		if _, ok := got[id]; !ok {
			missing = append(missing, id)
		}
	}
	missing = append(missing, w.Approvals...)
	if len(missing) > 0 {
		if len(approved) > 0 {
			if err := host.Step(ctx, StepRecord{State: state, Waiting: true, Resumed: true, Calls: w.Calls}); err != nil {
				return state, err
			}
		}
		return state, &SuspendError{Calls: missing, Approvals: undecided, Terms: spec.Approval}
	}
	results := make([]llm.Message, len(w.Calls))
	for i, c := range w.Calls {
		if m, ok := w.Done[c.ID]; ok {
			results[i] = m
			continue
		}
		r := got[c.ID]
		results[i] = llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Text: r.Text, IsError: r.IsError}
	}
	state.Messages = append(state.Messages, results...)
	state.Waiting = nil
	if err := host.Step(ctx, StepRecord{State: state, Results: results, Calls: w.Calls, Resumed: true}); err != nil {
		return state, err
	}
	return state, nil
}

// callIDs are the ids of calls.
func callIDs(calls []llm.ToolCall) []string {
	if len(calls) == 0 {
		return nil
	}
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.ID
	}
	return out
}

// outputLimit is the failure of a run whose model answer outgrew a bound,
// naming the bound and the setting that raises it.
func outputLimit(e *llm.OutputLimitError) *Failure {
	var msg string
	switch e.Bound {
	case llm.BoundToolArguments:
		msg = fmt.Sprintf("a tool call's arguments exceeded %d bytes (limits.tool_arguments_bytes)", e.Limit)
	case llm.BoundTokens:
		msg = fmt.Sprintf("the model's answer exceeded %d bytes, more than its max_output_tokens setting of %d allows at %d bytes a token",
			e.Limit, e.MaxTokens, llm.BytesPerToken)
	case llm.BoundEvent:
		msg = fmt.Sprintf("one event of the model's stream exceeded %d bytes (twice limits.model_output_bytes and 64 KiB)", e.Limit)
	default:
		msg = fmt.Sprintf("the model's answer exceeded %d bytes (limits.model_output_bytes)", e.Limit)
	}
	return &Failure{Code: CodeOutputLimit, Message: msg + "; the stream was stopped there and the model was not asked again"}
}

// limitReached answers the failure of a run that may not take another step.
func limitReached(l Limits, s State) *Failure {
	switch {
	case l.MaxSteps > 0 && s.Step >= l.MaxSteps:
		return &Failure{Code: CodeLimit, Message: fmt.Sprintf("the run reached its limit of %d steps", l.MaxSteps)}
	case l.MaxTokens > 0 && int64(s.Usage.InputTokens+s.Usage.OutputTokens) >= l.MaxTokens:
		return &Failure{Code: CodeLimit, Message: fmt.Sprintf("the run reached its limit of %d tokens", l.MaxTokens)}
	case !l.Deadline.IsZero() && !l.now().Before(l.Deadline):
		return &Failure{Code: CodeLimit, Message: "the run reached its time limit"}
	}
	return nil
}

// runTools executes a step's tool calls, up to ToolParallelism at once, and
// returns their results in the order of the calls. A call of an unknown tool
// or one whose tool fails as the model's business gives an error result; a
// Go error of a tool stops the step.
// modelFailure is the failure of a model call. The vendor's own error
// (llm.Error: its status, type and cleaned message) is the tenant's to
// read; any other error is svc's reading of the answer (a chunk it could
// not decode, say), whose text names svc's internals and is logged instead.
func modelFailure(err error) *Failure {
	var le *llm.Error
	switch {
	case errors.As(err, &le):
		return &Failure{Code: CodeModel, Message: le.Error()}
	case errors.Is(err, llm.ErrStreamCut):
		return &Failure{Code: CodeModel, Message: llm.ErrStreamCut.Error()}
	}
	return &Failure{Code: CodeModel, Message: "the model's answer could not be read (the cause is logged with the run's id)", Cause: err}
}

// errTimeUp ends tool calls that outlasted the run's time limit.
var errTimeUp = errors.New("agentloop: the run's time is up")

// withDeadline answers ctx ending at the run's deadline, if it has one.
func (l Limits) withDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if l.Deadline.IsZero() {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, l.Deadline.Sub(l.now()))
}

func runTools(ctx context.Context, spec Spec, byName map[string]tool.Tool, calls []llm.ToolCall, host Host) ([]tool.Result, error) {
	if err := host.ToolCalls(ctx, calls); err != nil {
		return nil, err
	}
	return execCalls(ctx, spec, byName, calls, false)
}

// execCalls executes calls as the agent's tool policy says: a denied
// tool's call is answered that it was not run, one that asks for a
// person is left pending, the others run, up to ToolParallelism at once.
// Approved calls (a person approved them) run whatever the policy says.
func execCalls(ctx context.Context, spec Spec, byName map[string]tool.Tool, calls []llm.ToolCall, approved bool) ([]tool.Result, error) {
	// The calls, not the host's writes, end with the run's time.
	callCtx, cancel := spec.Limits.withDeadline(ctx)
	defer cancel()
	par := spec.ToolParallelism
	if par <= 0 {
		par = 4
	}
	results := make([]tool.Result, len(calls))
	errs := make([]error, len(calls))
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			var res tool.Result
			var err error
			policy := spec.Policy[c.Name]
			if approved {
				policy = ""
			}
			switch policy {
			case PolicyDeny:
				res = tool.Errorf("the call was not run: the agent's tool policy denies the tool %q", c.Name)
			case PolicyAsk:
				res = tool.Result{Pending: true}
			default:
				res, err = call(tool.WithCallID(callCtx, c.ID), byName, c)
			}
			errs[i], results[i] = err, res
		}()
	}
	wg.Wait()
	if errors.Is(callCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		return nil, errTimeUp
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return results, nil
}

func call(ctx context.Context, byName map[string]tool.Tool, c llm.ToolCall) (res tool.Result, err error) {
	t, ok := byName[c.Name]
	if !ok {
		names := make([]string, 0, len(byName))
		for n := range byName {
			names = append(names, n)
		}
		return tool.Errorf("there is no tool %q; the tools are: %s", c.Name, strings.Join(names, ", ")), nil
	}
	defer func() {
		if p := recover(); p != nil {
			res, err = tool.Result{}, fmt.Errorf("tool %s panicked: %v", c.Name, p)
		}
	}()
	res, err = t.Call(ctx, []byte(c.Arguments))
	if err != nil {
		return tool.Result{}, fmt.Errorf("tool %s: %w", c.Name, err)
	}
	return res, nil
}
