package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/checkpoint"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/tracing"
)

// ErrLeaseLost is returned by every write of an attempt that no longer holds
// its run's lease: it expired, or the run was finished or given to another
// attempt. The attempt must stop touching the run at once.
var ErrLeaseLost = errors.New("run: the attempt lost its lease")

// Lease is an attempt's hold on a run: what every fenced write names.
type Lease struct {
	RunID       string
	AttemptID   string
	Number      int32
	WorkspaceID string
	ThreadID    string
	// Written are the checkpoint keys the attempt wrote, or may have: the
	// write that ends the attempt queues their deletion, all but the run's
	// current checkpoint.
	Written []string
}

// Claimed is a run a worker claimed, with its new attempt's lease.
type Claimed struct {
	Lease Lease
	Run   Run
	// CheckpointKey is the latest checkpoint's object key; nil before the
	// first step is recorded.
	CheckpointKey *string
	// FirstAttempt is set when no attempt ran the run before.
	FirstAttempt bool
	// Elapsed is the time since the run started (its first attempt's
	// claim) by the database's clock at the claim, the clock its start was
	// recorded on: every attempt, on any worker and whatever its own clock
	// says, counts the run's time limit from the same start.
	Elapsed time.Duration
	// Origin is the trace context of the request (or tool call) that
	// started the run; empty when it was not traced.
	Origin tracing.Origin
}

// Claim claims up to n runs for worker, each in a new attempt whose lease
// lasts lease, fairly across workspaces: each workspace's oldest ready runs
// are taken in the order of how many runs it holds already (its share), so
// a workspace with many waiting runs does not hold back another's; a
// workspace with Options.MaxRunning leased runs (worker.workspace_max_running,
// counted over every worker) is skipped, and its runs stay accepted. Runs other transactions hold locked are skipped, never waited
// for. It is one round trip: the claim lock and the claim statement
// (RunClaim: leases, attempts, run.status events, run.started webhooks) in
// one implicit transaction (docs/decisions/0038-fair-claims.md).
func (s *Service) Claim(ctx context.Context, worker string, n int, lease time.Duration) ([]Claimed, error) {
	if n <= 0 {
		return nil, nil
	}
	maxRunning := s.maxRunning
	if maxRunning <= 0 {
		maxRunning = math.MaxInt32
	}
	rows, err := s.q.RunClaim(ctx, claimBatch{s.pool}, db.RunClaimParams{PageLimit: int32(n), MaxRunning: int32(maxRunning),
		Worker: worker, LeaseSeconds: lease.Seconds()})
	if err != nil {
		return nil, fmt.Errorf("claim runs: %w", err)
	}
	out := make([]Claimed, len(rows))
	for i, row := range rows {
		r := claimedRun(row)
		out[i] = Claimed{
			Lease:         Lease{RunID: r.ID, AttemptID: *r.LeaseAttemptID, Number: r.AttemptCount, WorkspaceID: r.WorkspaceID, ThreadID: r.ThreadID},
			Run:           runOf(r),
			CheckpointKey: r.CheckpointKey,
			FirstAttempt:  r.AttemptCount == 1,
			Elapsed:       time.Duration(row.ElapsedSeconds * float64(time.Second)),
			Origin:        tracing.Origin{TraceParent: row.Traceparent, TraceState: row.Tracestate},
		}
		s.pub.Publish(ctx, r.ThreadID, []Event{{ThreadID: r.ThreadID, Seq: row.EventSeq, Type: EventRunStatus, RunID: &r.ID,
			At: row.EventAt, Data: row.EventData}})
	}
	return out, nil
}

// claimedRun is the run a RunClaim row carries.
func claimedRun(c db.RunClaimRow) db.Run {
	return db.Run{
		ID: c.ID, WorkspaceID: c.WorkspaceID, ThreadID: c.ThreadID, InputID: c.InputID, AgentID: c.AgentID,
		RevisionID: c.RevisionID, ModelKey: c.ModelKey, SkillRevisions: c.SkillRevisions, ParentRunID: c.ParentRunID,
		ParentCallID: c.ParentCallID, Status: c.Status, AttemptsUsed: c.AttemptsUsed, MaxAttempts: c.MaxAttempts,
		AttemptCount: c.AttemptCount, LeaseAttemptID: c.LeaseAttemptID, LeaseWorker: c.LeaseWorker,
		LeaseExpiresAt: c.LeaseExpiresAt, ReadyAt: c.ReadyAt, CancelRequestedAt: c.CancelRequestedAt,
		CheckpointKey: c.CheckpointKey, Step: c.Step, Usage: c.Usage, Error: c.Error, CreatedByID: c.CreatedByID,
		CreatedAt: c.CreatedAt, StartedAt: c.StartedAt, FinishedAt: c.FinishedAt, UpdatedAt: c.UpdatedAt,
		WaitingCalls: c.WaitingCalls, ApprovalWaitedSeconds: c.ApprovalWaitedSeconds,
	}
}

// Renewal is what renewing a lease learned.
type Renewal struct {
	// CancelRequested is set once someone asked to cancel the run.
	CancelRequested bool
	ExpiresAt       time.Time
}

// Renew extends the attempt's lease by lease from now. ErrLeaseLost when it
// no longer holds it (including a lease that already ran out: it is never
// revived, since the sweep may have handed the run on).
func (s *Service) Renew(ctx context.Context, l Lease, lease time.Duration) (Renewal, error) {
	row, err := s.q.RunRenewLease(ctx, s.pool, db.RunRenewLeaseParams{ID: l.RunID, AttemptID: &l.AttemptID, LeaseSeconds: lease.Seconds()})
	if dbx.IsNotFound(err) {
		return Renewal{}, ErrLeaseLost
	}
	if err != nil {
		return Renewal{}, fmt.Errorf("renew lease of %s: %w", l.RunID, err)
	}
	out := Renewal{CancelRequested: row.CancelRequestedAt != nil}
	if row.LeaseExpiresAt != nil {
		out.ExpiresAt = *row.LeaseExpiresAt
	}
	return out, nil
}

// fenced runs fn in a transaction that holds the run locked, only while l
// still holds its lease.
func (s *Service) fenced(ctx context.Context, l Lease, fn func(ctx context.Context, tx pgx.Tx, r db.Run, ev *pending) error) error {
	var ev pending
	err := dbx.WithTx(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) error {
		r, err := s.q.RunFence(ctx, tx, db.RunFenceParams{ID: l.RunID, AttemptID: &l.AttemptID})
		if dbx.IsNotFound(err) {
			return ErrLeaseLost
		}
		if err != nil {
			return fmt.Errorf("fence run %s: %w", l.RunID, err)
		}
		return fn(ctx, tx, r, &ev)
	})
	if err != nil {
		return err
	}
	ev.publish(ctx, s.pub)
	return nil
}

// Emit writes events of the attempt (streamed deltas, say) under the fence,
// in one round trip.
func (s *Service) Emit(ctx context.Context, l Lease, evs []NewEvent) error {
	if len(evs) == 0 {
		return nil
	}
	enc, err := encodeEvents(evs)
	if err != nil {
		return err
	}
	row, err := s.q.RunEmitFenced(ctx, s.pool, db.RunEmitFencedParams{RunID: l.RunID, AttemptID: &l.AttemptID,
		ThreadID: l.ThreadID, WorkspaceID: l.WorkspaceID, Types: enc.types, Data: enc.data, Ords: enc.ords})
	if dbx.IsNotFound(err) {
		return ErrLeaseLost
	}
	if err != nil {
		return fmt.Errorf("write events of %s: %w", l.RunID, err)
	}
	s.pub.Publish(ctx, l.ThreadID, enc.written(l.ThreadID, &l.RunID, row.LastSeq, row.At))
	return nil
}

// Step is a finished step, recorded with its checkpoint.
type Step struct {
	// Number is the count of steps done, this one included.
	Number int32
	// CheckpointKey is the object key of the checkpoint the caller wrote.
	CheckpointKey string
	Usage         Usage
	// Messages are the thread messages this step made, in order.
	Messages []Message
	// Events are written after them (message.completed, tool.result...).
	Events []NewEvent
}

// Commit records a step under the fence, in one round trip: the run's
// checkpoint key, step count and usage, the step's messages and events; the
// checkpoint it replaced is queued for deletion (checkpoint_cleanup) when
// another attempt wrote it (the attempt's own are written over by its later
// steps and deleted by its end: checkpoint.AttemptName).
// Refused with ErrLeaseLost, nothing is written and nothing names the
// checkpoint object the caller put: the caller may delete it.
func (s *Service) Commit(ctx context.Context, l Lease, st Step) error {
	if err := checkpoint.CheckKey(l.WorkspaceID, st.CheckpointKey); err != nil {
		return err
	}
	own, err := checkpoint.AttemptKeys(l.WorkspaceID, l.RunID, l.Number)
	if err != nil {
		return err
	}
	usage, err := json.Marshal(st.Usage)
	if err != nil {
		return err
	}
	msgs, err := encodeMessages(st.Messages)
	if err != nil {
		return err
	}
	evs, err := encodeEvents(st.Events)
	if err != nil {
		return err
	}
	row, err := s.q.RunCommitStep(ctx, s.pool, db.RunCommitStepParams{
		RunID: l.RunID, AttemptID: &l.AttemptID, WorkspaceID: l.WorkspaceID, ThreadID: l.ThreadID,
		CheckpointKey: &st.CheckpointKey, AttemptKeys: own, Step: st.Number, Usage: usage, CleanupID: id.New(id.Delivery),
		Roles: msgs.roles, Contents: msgs.contents, ToolCalls: msgs.toolCalls, ToolCallIds: msgs.toolCallIDs,
		IsErrors: msgs.isErrors, MessageOrds: msgs.ords,
		Types: evs.types, Data: evs.data, EventOrds: evs.ords,
	})
	if dbx.IsNotFound(err) {
		return ErrLeaseLost
	}
	if err != nil {
		return fmt.Errorf("record step %d of %s: %w", st.Number, l.RunID, err)
	}
	if len(st.Events) > 0 {
		s.pub.Publish(ctx, l.ThreadID, evs.written(l.ThreadID, &l.RunID, row.LastSeq, row.At))
	}
	return nil
}

// Refused reports whether a fenced write's error means that the write
// certainly changed nothing: the lease was lost, or the database answered
// the statement with an error (and rolled it back). Any other error, such
// as a connection lost while the statement ran, may hide a write that took
// place.
func Refused(err error) bool {
	var pgErr *pgconn.PgError
	return errors.Is(err, ErrLeaseLost) || errors.As(err, &pgErr)
}

// Finish ends the run in the attempt that holds it: succeeded, failed or
// cancelled, charging the attempt, and starts the thread's next input.
func (s *Service) Finish(ctx context.Context, l Lease, status Status, failure *Failure, usage Usage, toStep int32) error {
	return s.fenced(ctx, l, func(ctx context.Context, tx pgx.Tx, r db.Run, ev *pending) error {
		if err := s.endAttempt(ctx, tx, l, db.AttemptEndParams{ID: l.AttemptID, Status: "completed", Charged: true, ToStep: &toStep, Error: failureText(failure)}); err != nil {
			return err
		}
		_, err := s.l.finishRun(ctx, tx, r, status, failure, &usage, 1, ev)
		return err
	})
}

// HandOff gives the run back without charging the attempt: it becomes
// claimable again after delay (0: at once), continuing from its last
// checkpoint. A draining worker and a vendor's long Retry-After use it.
func (s *Service) HandOff(ctx context.Context, l Lease, delay time.Duration, toStep int32, reason string) error {
	return s.fenced(ctx, l, func(ctx context.Context, tx pgx.Tx, r db.Run, ev *pending) error {
		if err := s.endAttempt(ctx, tx, l, db.AttemptEndParams{ID: l.AttemptID, Status: "handed_off", Charged: false, ToStep: &toStep, Error: &reason}); err != nil {
			return err
		}
		if err := s.q.RunRelease(ctx, tx, db.RunReleaseParams{ID: r.ID, DelaySeconds: delay.Seconds(), Charge: 0}); err != nil {
			return fmt.Errorf("release run %s: %w", r.ID, err)
		}
		if err := s.q.RunNotify(ctx, tx); err != nil {
			return err
		}
		out, err := appendEvents(ctx, tx, l.WorkspaceID, l.ThreadID, &l.RunID, []NewEvent{
			{Type: EventError, Data: ErrorData{Code: "handed_off", Message: reason, Retrying: true}}})
		ev.add(l.ThreadID, out)
		return err
	})
}

func failureText(f *Failure) *string {
	if f == nil {
		return nil
	}
	s := f.Code + ": " + f.Message
	return &s
}

// Retry ends the attempt, charged, after a failure of svc rather than of the
// run (the object store or a tool's backend out of reach, say): the run
// continues from its last checkpoint in a new attempt, or fails once its
// charged attempts reach max_attempts.
func (s *Service) Retry(ctx context.Context, l Lease, toStep int32, reason string) error {
	return s.fenced(ctx, l, func(ctx context.Context, tx pgx.Tx, r db.Run, ev *pending) error {
		if err := s.endAttempt(ctx, tx, l, db.AttemptEndParams{ID: l.AttemptID, Status: "completed", Charged: true, ToStep: &toStep, Error: &reason}); err != nil {
			return err
		}
		if r.AttemptsUsed+1 >= r.MaxAttempts {
			_, err := s.l.finishRun(ctx, tx, r, StatusFailed, &Failure{Code: ErrCodeAttemptsExhausted,
				Message: fmt.Sprintf("the run used all %d attempts; the last one failed: %s", r.MaxAttempts, reason)}, nil, 1, ev)
			return err
		}
		if err := s.q.RunRelease(ctx, tx, db.RunReleaseParams{ID: r.ID, DelaySeconds: 0, Charge: 1}); err != nil {
			return fmt.Errorf("release run %s: %w", r.ID, err)
		}
		if err := s.q.RunNotify(ctx, tx); err != nil {
			return err
		}
		out, err := appendEvents(ctx, tx, l.WorkspaceID, l.ThreadID, &l.RunID, []NewEvent{
			{Type: EventError, Data: ErrorData{Code: "attempt_failed", Message: reason, Retrying: true}}})
		ev.add(l.ThreadID, out)
		return err
	})
}

// endAttempt records how attempt l ended (p) in tx, which holds its run
// locked, and in the same statement queues the deletion of the checkpoints
// the attempt wrote (l.Written), all but the run's current one.
func (s *Service) endAttempt(ctx context.Context, tx pgx.Tx, l Lease, p db.AttemptEndParams) error {
	return s.endAttemptKeys(ctx, tx, l.WorkspaceID, p, l.Written, 0)
}

// endAttemptKeys records how an attempt ended (p) in tx, which holds its
// run locked, and queues the deletion of checkpoints keys of the run, all
// but its current one, after delay. Keys that are not checkpoints of the
// workspace are dropped: the cleaner would refuse them, and they are none
// of the attempt's; so are repeated ones.
func (s *Service) endAttemptKeys(ctx context.Context, tx pgx.Tx, workspaceID string, p db.AttemptEndParams, keys []string, delay time.Duration) error {
	p.WrittenKeys = make([]string, 0, len(keys))
	for _, k := range keys {
		if checkpoint.CheckKey(workspaceID, k) == nil && !slices.Contains(p.WrittenKeys, k) {
			p.WrittenKeys = append(p.WrittenKeys, k)
		}
	}
	p.CleanupID, p.CleanupDelaySeconds = id.New(id.Delivery), delay.Seconds()
	if err := s.q.AttemptEnd(ctx, tx, p); err != nil {
		return fmt.Errorf("end attempt %s: %w", p.ID, err)
	}
	return nil
}
