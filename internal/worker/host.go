package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/svcdev/svc/internal/agentloop"
	"github.com/svcdev/svc/internal/llm"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/tool"
)

// host is the agent loop's host for one attempt: it writes streamed text as
// message.delta events every DeltaInterval, tool calls while the tools run
// (or with the step, when it ends first), and each step's checkpoint,
// messages and events under the fence.
type host struct {
	e *Executor
	a *attempt

	mu      sync.Mutex
	pending strings.Builder
	flushMu sync.Mutex // one flush at a time, in order
	// calls is the write of the current step's tool.call events; set by
	// ToolCalls and taken by Step, both on the loop's goroutine.
	calls *callWrite
	stop  chan struct{}
	done  chan struct{}
	// terms bound the waits for a person the run's calls ask for.
	terms agentloop.ApprovalTerms
}

func newHost(e *Executor, a *attempt) *host {
	h := &host{e: e, a: a, stop: make(chan struct{}), done: make(chan struct{})}
	go h.flusher()
	return h
}

// close stops the flusher after a last flush.
func (h *host) close() {
	close(h.stop)
	<-h.done
}

func (h *host) flusher() {
	defer close(h.done)
	t := time.NewTicker(h.e.d.DeltaInterval)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			_ = h.flush(h.a.ctx)
			return
		case <-t.C:
			_ = h.flush(h.a.ctx)
		}
	}
}

// Delta implements agentloop.Host.
func (h *host) Delta(text string) {
	h.mu.Lock()
	h.pending.WriteString(text)
	h.mu.Unlock()
}

// flush writes the text streamed since the last flush as one message.delta
// event. A lost lease stops the attempt.
func (h *host) flush(ctx context.Context) error {
	h.flushMu.Lock()
	defer h.flushMu.Unlock()
	if ctx.Err() != nil {
		return nil
	}
	evs := h.takePending()
	if len(evs) == 0 {
		return nil
	}
	return h.check(h.e.d.Runs.Emit(ctx, h.a.c.Lease, evs))
}

// takePending answers the text streamed since the last flush as a
// message.delta event (none when there is none), for the caller to write
// with its own events, in the same transaction. The caller holds flushMu,
// so deltas are written in order.
func (h *host) takePending() []run.NewEvent {
	h.mu.Lock()
	text := h.pending.String()
	h.pending.Reset()
	h.mu.Unlock()
	if text == "" {
		return nil
	}
	return []run.NewEvent{{Type: run.EventMessageDelta, Data: run.DeltaData{Text: text}}}
}

// check cuts the attempt short when a write learned that the lease is lost.
func (h *host) check(err error) error {
	if errors.Is(err, run.ErrLeaseLost) {
		h.a.cancel(errLeaseLost)
	}
	return err
}

// ToolCalls implements agentloop.Host: the text streamed before the calls
// and their tool.call events are written together, one DeltaInterval after
// the model asked for them, while the tools run. When the step ends first
// (tools that answer at once), Step writes them in its own statement
// instead, before the results: either way the calls precede their results
// in the thread's events, and a watcher sees them at most DeltaInterval
// after they were asked for (docs/decisions/0047-gathered-claims.md). A
// write that fails, for a lost lease or any other reason, cancels the
// attempt, and with it the tools: none runs on past a step that cannot be
// recorded. Before any of that, the attempt confirms its lease when it has
// not renewed it lately (attempt.confirmLease): a worker stopped past its
// lease while the model answered runs none of the step's tools.
func (h *host) ToolCalls(ctx context.Context, calls []llm.ToolCall) error {
	if err := h.a.confirmLease(ctx); err != nil {
		return err
	}
	h.flushMu.Lock()
	evs := h.takePending()
	for _, c := range calls {
		evs = append(evs, run.NewEvent{Type: run.EventToolCall,
			Data: run.ToolCallData{CallID: c.ID, Name: c.Name, Arguments: c.Arguments}})
	}
	cw := &callWrite{evs: evs, take: make(chan struct{}), done: make(chan error, 1)}
	h.calls = cw
	go func() {
		// flushMu is held until the events are written or handed to Step,
		// so no delta overtakes them.
		defer h.flushMu.Unlock()
		t := time.NewTimer(h.e.d.DeltaInterval)
		defer t.Stop()
		select {
		case <-cw.take:
			cw.done <- errHandedOver
			return
		case <-t.C:
		}
		err := h.check(h.e.d.Runs.Emit(ctx, h.a.c.Lease, evs))
		if err != nil && !errors.Is(err, run.ErrLeaseLost) && ctx.Err() == nil {
			err = fmt.Errorf("write the step's tool calls: %w", err)
			h.a.cancel(err)
		}
		cw.done <- err
	}()
	return nil
}

// callWrite is the pending write of a step's tool.call events.
type callWrite struct {
	evs []run.NewEvent
	// take asks the writer to hand the events over unwritten.
	take chan struct{}
	// done answers the write's error, or errHandedOver.
	done chan error
}

// errHandedOver answers a callWrite whose events Step writes itself.
var errHandedOver = errors.New("tool calls handed over")

// takeToolCalls ends the write ToolCalls started, if any: it answers the
// events still to be written (handed over before the writer's turn came),
// or waits for the write and answers its error.
func (h *host) takeToolCalls() ([]run.NewEvent, error) {
	cw := h.calls
	if cw == nil {
		return nil, nil
	}
	h.calls = nil
	select {
	case cw.take <- struct{}{}:
		<-cw.done
		return cw.evs, nil
	case err := <-cw.done:
		return nil, err
	}
}

// Step implements agentloop.Host: the checkpoint object first (while the
// step's tool.call events may still be being written), then, in one fenced
// statement, its key, the step's messages and events, after the text
// streamed since the last flush (the model has finished streaming, so none
// arrives meanwhile). A step that is not recorded leaves no delta of its
// last moments either: the next attempt streams the step again.
func (h *host) Step(ctx context.Context, rec agentloop.StepRecord) error {
	l := h.a.c.Lease
	key, err := h.e.saveCheckpoint(ctx, l, rec.State)
	callEvs, werr := h.takeToolCalls()
	if werr != nil {
		h.discardCheckpoint(key)
		return werr
	}
	if err != nil {
		h.discardCheckpoint(key)
		return err
	}
	h.flushMu.Lock()
	defer h.flushMu.Unlock()
	var msgs []run.Message
	var evs []run.NewEvent
	if c := rec.Compaction; c != nil {
		evs = append(evs, run.NewEvent{Type: run.EventContextCompacted, Data: run.ContextCompactedData{
			Strategy: string(c.Strategy), Summary: c.Summary, FromPosition: c.FromPosition, ThroughPosition: c.ThroughPosition,
			KeptPosition: c.KeptPosition, ReplacedMessages: c.Replaced, SummarizedMessages: c.Summarized,
			TokensBefore: c.TokensBefore, TokensAfter: c.TokensAfter, SummaryTokens: c.SummaryTokens}})
	}
	evs = append(evs, callEvs...)
	evs = append(evs, h.takePending()...)
	if !rec.Resumed {
		calls := make([]run.ToolCall, len(rec.Assistant.ToolCalls))
		for i, c := range rec.Assistant.ToolCalls {
			calls[i] = run.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments}
		}
		msgs = append(msgs, run.Message{Role: "assistant", Content: rec.Assistant.Text, ToolCalls: calls})
		evs = append(evs, run.NewEvent{Type: run.EventMessageCompleted, Data: run.MessageData{Role: "assistant", Content: rec.Assistant.Text, ToolCalls: calls}})
	}
	for _, c := range rec.Approvals {
		evs = append(evs, run.NewEvent{Type: run.EventApprovalRequested, Data: run.ApprovalRequestedData{
			CallID: c.ID, Name: c.Name, Arguments: c.Arguments, TimeoutSeconds: int(h.terms.Timeout.Seconds()), OnTimeout: h.terms.OnTimeout}})
	}
	callsOf := rec.Assistant.ToolCalls
	if rec.Resumed {
		callsOf = rec.Calls
	}
	for i, r := range rec.Results {
		callID := r.ToolCallID
		msgs = append(msgs, run.Message{Role: "tool", Content: r.Text, ToolCallID: &callID, IsError: r.IsError})
		evs = append(evs, run.NewEvent{Type: run.EventToolResult, Data: run.ToolResultData{
			CallID: callID, Name: callsOf[i].Name, Content: r.Text, IsError: r.IsError}})
	}
	usage := run.Usage{InputTokens: int64(rec.State.Usage.InputTokens), OutputTokens: int64(rec.State.Usage.OutputTokens)}
	step := int32(rec.State.Step)
	if err := h.check(h.e.d.Runs.Commit(ctx, l, run.Step{Number: step, CheckpointKey: key, Usage: usage, Messages: msgs, Events: evs})); err != nil {
		if run.Refused(err) {
			// Nothing names the object.
			h.discardCheckpoint(key)
		} else {
			// The failure may hide a commit that took place: the
			// attempt's end deletes the object unless it is the run's
			// checkpoint.
			h.a.wrote(key)
		}
		return err
	}
	// The next step but one writes over the object; the attempt's end
	// deletes it unless it is the run's checkpoint then.
	h.a.wrote(key)
	h.a.step.Store(step)
	h.a.log.Debug("step recorded", "step", step, "tool_calls", len(rec.Assistant.ToolCalls), "results", len(rec.Results))
	return nil
}

// discardCheckpoint deletes a checkpoint object of this attempt that no
// commit recorded ("": none was written): its name is the attempt's own, so
// no later attempt replaces it, and no step's cleanup names it. One that
// cannot be deleted now is left to the attempt's end, which queues its
// deletion in the same statement that records the end (or, for a worker
// gone meanwhile, the lease sweep's).
func (h *host) discardCheckpoint(key string) {
	if key == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), discardTimeout)
	defer cancel()
	if err := h.e.d.Objects.Delete(ctx, key); err != nil {
		h.a.log.Warn("could not delete a checkpoint no step recorded; the attempt's end will", "key", key, "error", err.Error())
		h.a.wrote(key)
	}
}

// discardTimeout bounds deleting an unrecorded checkpoint.
const discardTimeout = 10 * time.Second

// Await implements agentloop.Host: the answers of waited calls that arrived.
func (h *host) Await(ctx context.Context, calls []string) (map[string]tool.Result, error) {
	got, err := h.e.d.Runs.CallResults(ctx, h.a.c.Lease.RunID, calls)
	if err != nil {
		return nil, err
	}
	out := make(map[string]tool.Result, len(got))
	for id, r := range got {
		out[id] = tool.Result{Text: r.Content, IsError: r.IsError}
	}
	return out, nil
}

// Decisions implements agentloop.Host: the decisions made on calls that
// waited for a person.
func (h *host) Decisions(ctx context.Context, calls []string) (map[string]agentloop.Decision, error) {
	got, err := h.e.d.Runs.Decisions(ctx, h.a.c.Lease.RunID, calls)
	if err != nil {
		return nil, err
	}
	out := make(map[string]agentloop.Decision, len(got))
	for id, d := range got {
		out[id] = agentloop.Decision{Approved: d.Approved, Reason: d.Reason}
	}
	return out, nil
}

// Continue implements agentloop.Host: a draining worker stops between steps.
func (h *host) Continue() bool { return !h.a.stop.Load() }
