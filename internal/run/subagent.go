package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/outbox"
)

// ChildRefused is why a child run could not start (its agent archived, its
// model disabled...): the parent's model is told, and the parent goes on.
type ChildRefused struct{ Reason string }

func (c *ChildRefused) Error() string { return c.Reason }

// StartChild starts a child run of agent agentID for the parent's tool call
// callID, on a thread of its own, under the parent attempt's fence, within
// lim (a child beyond them is refused: ChildRefused). A call starts at most
// one child: a step retried after a crash finds the child its first try
// started.
func (s *Service) StartChild(ctx context.Context, l Lease, callID, agentID, task string, lim SubagentLimits) (string, error) {
	if err := validateContent("task", task); err != nil {
		return "", &ChildRefused{Reason: "the task must be 1 to 100000 characters of text"}
	}
	var childID string
	err := s.fenced(ctx, l, func(ctx context.Context, tx pgx.Tx, parent db.Run, ev *pending) error {
		existing, err := s.q.RunChildOfCall(ctx, tx, db.RunChildOfCallParams{ParentRunID: &parent.ID, ParentCallID: &callID})
		if err == nil {
			childID = existing.ID
			return nil
		}
		if !dbx.IsNotFound(err) {
			return err
		}
		if err := s.admitChild(ctx, tx, parent, lim); err != nil {
			return err
		}
		sp, err := tx.Begin(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = sp.Rollback(ctx) }()
		meta, _ := json.Marshal(map[string]any{"parent_run_id": parent.ID, "parent_call_id": callID})
		th, err := s.q.ThreadInsert(ctx, sp, db.ThreadInsertParams{ID: id.New(id.Thread), WorkspaceID: parent.WorkspaceID,
			AgentID: agentID, Metadata: meta, CreatedByID: parent.CreatedByID})
		if err != nil {
			return refusal(dbx.Translate(err, "agent"))
		}
		in, err := s.q.InputInsert(ctx, sp, traced(ctx, db.InputInsertParams{ID: id.New(id.Input), WorkspaceID: parent.WorkspaceID,
			ThreadID: th.ID, Content: task, CreatedByID: parent.CreatedByID}))
		if err != nil {
			return err
		}
		var sub pending
		child, err := s.l.startRun(ctx, sp, th, in, &parent, &callID, &sub)
		if err != nil {
			return refusal(err)
		}
		if err := sp.Commit(ctx); err != nil {
			return err
		}
		ev.add(th.ID, sub.byThread[th.ID])
		childID = child.ID
		return nil
	})
	return childID, err
}

// refusal turns an apperr (the workspace's state refuses the child) into a
// ChildRefused; other errors stay.
func refusal(err error) error {
	var ae *apperr.Error
	if errors.As(err, &ae) {
		msg := ae.Msg
		for _, d := range ae.Details {
			msg += "; " + d.Reason
		}
		return &ChildRefused{Reason: msg}
	}
	return err
}

// CallResult is the answer to a waited call.
type CallResult struct {
	Content string
	IsError bool
}

// CallResults reads the results of run runID's calls that arrived.
func (s *Service) CallResults(ctx context.Context, runID string, calls []string) (map[string]CallResult, error) {
	rows, err := s.q.CallResults(ctx, s.pool, db.CallResultsParams{RunID: runID, CallIds: calls})
	if err != nil {
		return nil, err
	}
	out := make(map[string]CallResult, len(rows))
	for _, r := range rows {
		out[r.CallID] = CallResult{Content: r.Content, IsError: r.IsError}
	}
	return out, nil
}

// subagentResult is a subagent_result delivery's payload.
type subagentResult struct {
	ParentRunID string `json:"parent_run_id"`
	CallID      string `json:"call_id"`
	ChildRunID  string `json:"child_run_id"`
	Status      Status `json:"status"`
	Content     string `json:"content"`
}

// enqueueChildResult queues the result of child run r (finished with
// status) for its parent, in tx: the child's last answer, or why it did not
// succeed.
func (l *lifecycle) enqueueChildResult(ctx context.Context, tx pgx.Tx, r db.Run, status Status, failure *Failure) error {
	p := subagentResult{ParentRunID: *r.ParentRunID, CallID: *r.ParentCallID, ChildRunID: r.ID, Status: status}
	if status == StatusSucceeded {
		text, err := l.q.LastAssistantText(ctx, tx, &r.ID)
		if err != nil && !dbx.IsNotFound(err) {
			return err
		}
		p.Content = text
	} else {
		p.Content = fmt.Sprintf("the subagent's run %s ended %s", r.ID, status)
		if failure != nil {
			p.Content += ": " + failure.Message
		}
	}
	_, err := outbox.Enqueue(ctx, tx, outbox.Delivery{Kind: outbox.KindSubagentResult, WorkspaceID: r.WorkspaceID, Payload: p})
	return err
}

// cancelChildren ends the unfinished children of run r, which ended: a
// child no attempt holds is cancelled at once; a running one is asked to
// stop.
func (l *lifecycle) cancelChildren(ctx context.Context, tx pgx.Tx, r db.Run, ev *pending) error {
	kids, err := l.q.RunUnfinishedChildren(ctx, tx, &r.ID)
	if err != nil {
		return err
	}
	for _, k := range kids {
		if k.LeaseAttemptID == nil {
			if _, err := l.finishRun(ctx, tx, k, StatusCancelled, &Failure{Code: "cancelled", Message: "its parent run " + r.ID + " ended"}, nil, 0, ev); err != nil {
				return err
			}
			continue
		}
		if _, err := l.q.RunRequestCancel(ctx, tx, k.ID); err != nil {
			return err
		}
		if err := l.q.RunCancelNotify(ctx, tx, k.ID); err != nil {
			return err
		}
	}
	return nil
}

// SubagentResults delivers subagent_result outbox deliveries: it records a
// child's result for its parent and wakes the parent once all the calls it
// waits for are answered.
type SubagentResults struct {
	pool *pgxpool.Pool
	q    *db.Queries
}

// NewSubagentResults returns the subagent_result deliverer.
func NewSubagentResults(pool *pgxpool.Pool) *SubagentResults {
	return &SubagentResults{pool: pool, q: db.New()}
}

// Deliver implements outbox.Deliverer.
func (d *SubagentResults) Deliver(ctx context.Context, c outbox.Claimed) outbox.Outcome {
	var p subagentResult
	if err := json.Unmarshal(c.Payload, &p); err != nil || p.ParentRunID == "" || p.CallID == "" {
		return outbox.Permanent(fmt.Errorf("subagent_result %s: malformed payload", c.ID))
	}
	err := dbx.WithTx(ctx, d.pool, func(ctx context.Context, tx pgx.Tx) error {
		// The parent is locked first, so the results of its calls are
		// recorded one at a time and the last one's wake check sees all the
		// others (two checks side by side would each miss the other's result
		// and leave the parent waiting for ever); a Suspend in progress is
		// waited for, and its waiting calls seen.
		if _, err := d.q.RunLock(ctx, tx, db.RunLockParams{WorkspaceID: c.WorkspaceID, ID: p.ParentRunID}); err != nil {
			return err
		}
		child := p.ChildRunID
		if err := d.q.CallResultInsert(ctx, tx, db.CallResultInsertParams{RunID: p.ParentRunID, CallID: p.CallID,
			ChildRunID: &child, Content: p.Content, IsError: p.Status != StatusSucceeded}); err != nil {
			return err
		}
		n, err := d.q.RunWakeIfAnswered(ctx, tx, p.ParentRunID)
		if err != nil {
			return err
		}
		if n > 0 {
			return d.q.RunNotify(ctx, tx)
		}
		return nil
	})
	if err != nil {
		return outbox.Failed(fmt.Errorf("record subagent result for %s: %w", p.ParentRunID, err))
	}
	return outbox.Delivered()
}
