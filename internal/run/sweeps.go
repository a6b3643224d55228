package run

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/checkpoint"
	"github.com/svcdev/svc/internal/dbx"
)

// SweepBatch is how many rows one transaction of a sweep handles.
const SweepBatch = 100

// ExpireLeases ends the attempts whose lease ran out (the expire_leases
// sweep), SweepBatch runs per transaction until none is left. Each such
// attempt is charged. Its run is cancelled if a cancel was asked for, fails
// once its charged attempts reach max_attempts, and otherwise becomes
// claimable at once to continue from its last checkpoint in a new attempt.
// It answers how many leases it ended.
func (s *Service) ExpireLeases(ctx context.Context) (int, error) {
	n, err := sweepBatches(ctx, s, s.q.RunExpiredLeases, func(ctx context.Context, tx pgx.Tx, r db.Run, ev *pending) error {
		if err := s.expire(ctx, tx, r, ev); err != nil {
			return fmt.Errorf("expire lease of %s: %w", r.ID, err)
		}
		return nil
	})
	s.metrics.leasesExpired(n)
	return n, err
}

// sweepBatches runs a sweep: it reads up to SweepBatch rows due with read
// and handles each with handle, all in one transaction, whose events are
// published once it commits; then the next batch, until a batch is not
// full. It answers how many rows it handled.
func sweepBatches[R any](ctx context.Context, s *Service, read func(context.Context, db.DBTX, int32) ([]R, error),
	handle func(ctx context.Context, tx pgx.Tx, row R, ev *pending) error) (int, error) {
	total := 0
	for {
		var ev pending
		n, err := dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (int, error) {
			rows, err := read(ctx, tx, SweepBatch)
			if err != nil {
				return 0, err
			}
			for _, r := range rows {
				if err := handle(ctx, tx, r, &ev); err != nil {
					return 0, err
				}
			}
			return len(rows), nil
		})
		if err != nil {
			return total, err
		}
		ev.publish(ctx, s.pub)
		total += n
		if n < SweepBatch {
			return total, nil
		}
	}
}

func (s *Service) expire(ctx context.Context, tx pgx.Tx, r db.Run, ev *pending) error {
	msg := "the worker's lease expired (it stopped, crashed or lost the database)"
	// The worker may have written a checkpoint it did not record before it
	// went: its name follows from the attempt and the run's step. A worker
	// that is still alive stops writing within a lease, so the deletion
	// waits that long (Options.Lease).
	strays, err := checkpoint.AttemptStrays(r.WorkspaceID, r.ID, r.AttemptCount, r.Step)
	if err != nil {
		return err
	}
	if err := s.endAttemptKeys(ctx, tx, r.WorkspaceID, db.AttemptEndParams{ID: *r.LeaseAttemptID, Status: "expired", Charged: true, ToStep: &r.Step, Error: &msg},
		strays, s.lease); err != nil {
		return err
	}
	switch {
	case r.CancelRequestedAt != nil:
		_, err := s.l.finishRun(ctx, tx, r, StatusCancelled, &Failure{Code: "cancelled", Message: "cancelled while its worker was gone"}, nil, 1, ev)
		return err
	case r.AttemptsUsed+1 >= r.MaxAttempts:
		_, err := s.l.finishRun(ctx, tx, r, StatusFailed, &Failure{Code: ErrCodeAttemptsExhausted,
			Message: fmt.Sprintf("the run used all %d attempts; the last one's lease expired", r.MaxAttempts)}, nil, 1, ev)
		return err
	}
	if err := s.q.RunRelease(ctx, tx, db.RunReleaseParams{ID: r.ID, DelaySeconds: 0, Charge: 1}); err != nil {
		return err
	}
	if err := s.q.RunNotify(ctx, tx); err != nil {
		return err
	}
	out, err := appendEvents(ctx, tx, r.WorkspaceID, r.ThreadID, &r.ID, []NewEvent{{Type: EventError, Data: ErrorData{
		Code: "lease_expired", Message: msg + "; the run continues from its last checkpoint", Retrying: true}}})
	ev.add(r.ThreadID, out)
	return err
}

// AdvanceThreads starts the next queued input of idle threads (the
// advance_threads sweep), SweepBatch threads per transaction until none is
// left. Posting an input to an idle thread and finishing a run start inputs
// at once; this sweep starts what those could not (an input queued while its
// thread's run was finishing in another transaction, say). It answers how
// many threads it advanced.
func (s *Service) AdvanceThreads(ctx context.Context) (int, error) {
	var ev pending
	n, err := dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (int, error) {
		rows, err := s.q.IdleThreadsWithQueue(ctx, tx, SweepBatch)
		if err != nil {
			return 0, err
		}
		for _, r := range rows {
			if err := s.l.advance(ctx, tx, r.WorkspaceID, r.ThreadID, "", &ev); err != nil {
				return 0, fmt.Errorf("advance thread %s: %w", r.ThreadID, err)
			}
		}
		return len(rows), nil
	})
	if err != nil {
		return 0, err
	}
	ev.publish(ctx, s.pub)
	return n, nil
}
