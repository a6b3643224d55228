package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/agent"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/model"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/skill"
	"github.com/svcdev/svc/internal/webhook"
)

// lifecycle holds what starting and finishing runs needs; the control
// service, the worker side and the sweeps share it.
type lifecycle struct {
	q           *db.Queries
	agents      *agent.Service
	skills      *skill.Service
	reg         *catalog.Registry
	maxAttempts int32
	metrics     *Metrics
}

// pending collects the events a transaction wrote, published once it committed.
type pending struct {
	byThread map[string][]Event
	order    []string
	// committed are run once the transaction has committed (afterCommit).
	committed []func()
}

func (p *pending) add(threadID string, evs []Event) {
	if len(evs) == 0 {
		return
	}
	if p.byThread == nil {
		p.byThread = map[string][]Event{}
	}
	if _, ok := p.byThread[threadID]; !ok {
		p.order = append(p.order, threadID)
	}
	p.byThread[threadID] = append(p.byThread[threadID], evs...)
}

func (p *pending) publish(ctx context.Context, pub Publisher) {
	for _, th := range p.order {
		pub.Publish(ctx, th, p.byThread[th])
	}
	for _, fn := range p.committed {
		fn()
	}
}

// startRun starts a run of thread th for input in, in tx (which holds th
// locked): it pins the agent's revision (the thread's, or the head's default
// now), its model key and its skills' revisions, checks the model and its
// provider are enabled, and writes the run, the input's start, the user's
// message, the run.status event and the run.accepted webhook. Workers are
// woken when tx commits.
func (l *lifecycle) startRun(ctx context.Context, tx pgx.Tx, th db.Thread, in db.ThreadInput, parent *db.Run, parentCallID *string, ev *pending) (db.Run, error) {
	rev, err := l.agents.RequireRunnable(ctx, tx, th.WorkspaceID, th.AgentID, th.RevisionID)
	if err != nil {
		return db.Run{}, err
	}
	cfg := rev.Config
	if err := model.RequireUsable(ctx, tx, l.reg, th.WorkspaceID, cfg.Model); err != nil {
		return db.Run{}, err
	}
	skills := make([]SkillRevision, 0, len(cfg.Skills))
	for _, ref := range cfg.Skills {
		sr, err := l.skills.Runnable(ctx, tx, th.WorkspaceID, ref.SkillID, ref.RevisionID)
		if err != nil {
			return db.Run{}, err
		}
		skills = append(skills, SkillRevision{SkillID: ref.SkillID, RevisionID: sr.ID})
	}
	skillJSON, err := json.Marshal(skills)
	if err != nil {
		return db.Run{}, err
	}
	p := db.RunInsertParams{
		ID: id.New(id.Run), WorkspaceID: th.WorkspaceID, ThreadID: th.ID, InputID: &in.ID, AgentID: th.AgentID,
		RevisionID: rev.ID, ModelKey: cfg.Model, SkillRevisions: skillJSON, MaxAttempts: l.maxAttempts,
		CreatedByID: in.CreatedByID, ParentCallID: parentCallID,
		// The run continues the trace of the request that posted its input.
		Traceparent: in.Traceparent, Tracestate: in.Tracestate,
	}
	if parent != nil {
		root, depth := treeOf(*parent)
		p.ParentRunID, p.RootRunID, p.Depth = &parent.ID, &root, depth
	}
	r, err := l.q.RunInsert(ctx, tx, p)
	if err != nil {
		return db.Run{}, dbx.Translate(err, "run")
	}
	if _, err := l.q.InputStart(ctx, tx, db.InputStartParams{ID: in.ID, RunID: &r.ID}); err != nil {
		return db.Run{}, fmt.Errorf("start input %s: %w", in.ID, err)
	}
	if err := l.q.ThreadSetActiveRun(ctx, tx, db.ThreadSetActiveRunParams{ID: th.ID, RunID: &r.ID}); err != nil {
		return db.Run{}, fmt.Errorf("set active run: %w", err)
	}
	if err := appendMessages(ctx, tx, th.WorkspaceID, th.ID, &r.ID, []Message{{Role: "user", Content: in.Content}}); err != nil {
		return db.Run{}, err
	}
	evs, err := appendEvents(ctx, tx, th.WorkspaceID, th.ID, &r.ID, []NewEvent{{Type: EventRunStatus, Data: RunStatusData{Status: StatusAccepted}}})
	if err != nil {
		return db.Run{}, err
	}
	ev.add(th.ID, evs)
	if err := l.emit(ctx, tx, webhook.RunAccepted, r); err != nil {
		return db.Run{}, err
	}
	if err := l.q.RunNotify(ctx, tx); err != nil {
		return db.Run{}, fmt.Errorf("wake workers: %w", err)
	}
	return r, nil
}

// finishRun ends run r (locked in tx) with status, charging the attempt that
// ends with it (charge is 0 or 1), and frees its thread: the thread's next
// queued input starts at once, or the thread becomes idle.
func (l *lifecycle) finishRun(ctx context.Context, tx pgx.Tx, r db.Run, status Status, failure *Failure, usage *Usage, charge int32, ev *pending) (db.Run, error) {
	p := db.RunFinishParams{ID: r.ID, Status: string(status), Charge: charge}
	if failure != nil {
		b, err := json.Marshal(failure)
		if err != nil {
			return db.Run{}, err
		}
		p.Error = b
	}
	if usage != nil {
		b, err := json.Marshal(usage)
		if err != nil {
			return db.Run{}, err
		}
		p.Usage = b
	}
	done, err := l.q.RunFinish(ctx, tx, p)
	if err != nil {
		if dbx.IsNotFound(err) {
			return db.Run{}, errAlreadyFinished
		}
		return db.Run{}, fmt.Errorf("finish run %s: %w", r.ID, err)
	}
	evs, err := appendEvents(ctx, tx, r.WorkspaceID, r.ThreadID, &r.ID, []NewEvent{{Type: EventRunStatus, Data: RunStatusData{Status: status, Error: failure}}})
	if err != nil {
		return db.Run{}, err
	}
	ev.add(r.ThreadID, evs)
	ev.afterCommit(func() { l.metrics.finished(status, done) })
	hook := map[Status]string{StatusSucceeded: webhook.RunSucceeded, StatusFailed: webhook.RunFailed, StatusCancelled: webhook.RunCancelled}[status]
	if err := l.emit(ctx, tx, hook, done); err != nil {
		return db.Run{}, err
	}
	if r.ParentRunID != nil && r.ParentCallID != nil {
		if err := l.enqueueChildResult(ctx, tx, r, status, failure); err != nil {
			return db.Run{}, err
		}
	}
	if err := l.closeApprovals(ctx, tx, r, ev); err != nil {
		return db.Run{}, err
	}
	if err := l.cancelChildren(ctx, tx, r, ev); err != nil {
		return db.Run{}, err
	}
	if err := l.advance(ctx, tx, r.WorkspaceID, r.ThreadID, r.ID, ev); err != nil {
		return db.Run{}, err
	}
	return done, nil
}

var errAlreadyFinished = errors.New("run: the run is already finished")

// advance frees thread threadID from its finished run finishedRunID (if it
// is still the active one) and starts its next queued input, if any, or
// reports the thread idle. An input that cannot start (its agent archived,
// its model disabled) is cancelled with an error event, and the next is
// tried.
func (l *lifecycle) advance(ctx context.Context, tx pgx.Tx, workspaceID, threadID, finishedRunID string, ev *pending) error {
	th, err := l.q.ThreadLock(ctx, tx, db.ThreadLockParams{WorkspaceID: workspaceID, ID: threadID})
	if err != nil {
		return fmt.Errorf("lock thread %s: %w", threadID, err)
	}
	if th.ActiveRunID != nil && *th.ActiveRunID != finishedRunID {
		return nil
	}
	if th.ActiveRunID != nil {
		if err := l.q.ThreadSetActiveRun(ctx, tx, db.ThreadSetActiveRunParams{ID: th.ID}); err != nil {
			return fmt.Errorf("free thread %s: %w", th.ID, err)
		}
		th.ActiveRunID = nil
	}
	for {
		in, err := l.q.InputNextQueued(ctx, tx, th.ID)
		if dbx.IsNotFound(err) {
			return l.emitIdle(ctx, tx, th)
		}
		if err != nil {
			return fmt.Errorf("next input of %s: %w", th.ID, err)
		}
		started, err := l.tryStart(ctx, tx, th, in, ev)
		if err != nil {
			return err
		}
		if started {
			return nil
		}
	}
}

// tryStart starts a run for in inside a savepoint. When the input cannot
// start for a reason of the workspace's state (an apperr: archived agent,
// disabled model), it is cancelled and an error event says why; false. A
// failure of svc's own (the database out of reach, a collision to retry)
// is returned: the input stays queued and the caller's transaction fails.
func (l *lifecycle) tryStart(ctx context.Context, tx pgx.Tx, th db.Thread, in db.ThreadInput, ev *pending) (bool, error) {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return false, err
	}
	var sub pending
	_, err = l.startRun(ctx, sp, th, in, nil, nil, &sub)
	if err == nil {
		if err := sp.Commit(ctx); err != nil {
			return false, err
		}
		ev.add(th.ID, sub.byThread[th.ID])
		return true, nil
	}
	_ = sp.Rollback(ctx)
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Kind == apperr.KindInternal || ae.Kind == apperr.KindUnavailable {
		return false, err
	}
	if err := l.q.InputCancel(ctx, tx, in.ID); err != nil {
		return false, fmt.Errorf("cancel input %s: %w", in.ID, err)
	}
	evs, err := appendEvents(ctx, tx, th.WorkspaceID, th.ID, nil, []NewEvent{{Type: EventError, Data: ErrorData{
		Code: ae.Kind.Code(), Message: "input " + in.ID + " could not start: " + ae.Msg}}})
	if err != nil {
		return false, err
	}
	ev.add(th.ID, evs)
	return false, nil
}

func (l *lifecycle) emitIdle(ctx context.Context, tx pgx.Tx, th db.Thread) error {
	return webhook.Emit(ctx, tx, th.WorkspaceID, webhook.Event{Type: webhook.ThreadIdle, Data: map[string]any{
		"thread_id": th.ID, "agent_id": th.AgentID,
	}})
}

// emit emits a run webhook event with the run's ids, status and error (the
// contract's RunWebhookData; RunClaim writes run.started's in SQL, the same).
func (l *lifecycle) emit(ctx context.Context, tx pgx.Tx, typ string, r db.Run) error {
	var failure json.RawMessage // null when the run has no error
	if len(r.Error) > 0 {
		failure = json.RawMessage(r.Error)
	}
	data := map[string]any{
		"run_id": r.ID, "thread_id": r.ThreadID, "agent_id": r.AgentID, "revision_id": r.RevisionID,
		"status": r.Status, "attempts_used": r.AttemptsUsed, "error": failure,
	}
	return webhook.Emit(ctx, tx, r.WorkspaceID, webhook.Event{Type: typ, Data: data})
}

// encodedMessages are thread messages about to be written, as the queries
// take them.
type encodedMessages struct {
	roles       []string
	contents    []string
	toolCalls   []json.RawMessage
	toolCallIDs []string
	isErrors    []bool
	ords        []int32
}

func encodeMessages(msgs []Message) (encodedMessages, error) {
	n := len(msgs)
	out := encodedMessages{roles: make([]string, n), contents: make([]string, n), toolCalls: make([]json.RawMessage, n),
		toolCallIDs: make([]string, n), isErrors: make([]bool, n), ords: make([]int32, n)}
	for i, m := range msgs {
		calls := m.ToolCalls
		if calls == nil {
			calls = []ToolCall{}
		}
		b, err := json.Marshal(calls)
		if err != nil {
			return encodedMessages{}, fmt.Errorf("encode a %s message: %w", m.Role, err)
		}
		out.roles[i], out.contents[i], out.toolCalls[i], out.isErrors[i], out.ords[i] = m.Role, textSafe(m.Content), jsonbSafe(b), m.IsError, int32(i+1)
		if m.ToolCallID != nil {
			out.toolCallIDs[i] = textSafe(*m.ToolCallID)
		}
	}
	return out, nil
}

// appendMessages writes messages of a thread in order after its last one.
func appendMessages(ctx context.Context, q db.DBTX, workspaceID, threadID string, runID *string, msgs []Message) error {
	if len(msgs) == 0 {
		return nil
	}
	enc, err := encodeMessages(msgs)
	if err != nil {
		return err
	}
	if err := db.New().MessageAppend(ctx, q, db.MessageAppendParams{ThreadID: threadID, WorkspaceID: workspaceID, RunID: runID,
		Roles: enc.roles, Contents: enc.contents, ToolCalls: enc.toolCalls, ToolCallIds: enc.toolCallIDs, IsErrors: enc.isErrors, Ords: enc.ords}); err != nil {
		return fmt.Errorf("append thread messages: %w", err)
	}
	return nil
}
