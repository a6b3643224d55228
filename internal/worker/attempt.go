package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/svcdev/svc/internal/agentloop"
	"github.com/svcdev/svc/internal/run"
)

// settleTimeout bounds the write that ends an attempt.
const settleTimeout = 15 * time.Second

// attempt is one claimed run being executed.
type attempt struct {
	w        *Worker
	c        run.Claimed
	ctx      context.Context
	cancelFn context.CancelCauseFunc
	// log is the worker's logger with the attempt's run_id, attempt_id,
	// attempt (its number), workspace_id and thread_id: every record of
	// the attempt, its tools' included, carries them.
	log  *slog.Logger
	stop atomic.Bool
	// step is the count of steps recorded, for the attempt's end.
	step atomic.Int32
	// written are the checkpoint keys the attempt wrote (or may have) and
	// did not delete itself, for its end to queue their deletion, all but
	// the run's current checkpoint: its two names (checkpoint.AttemptName)
	// once used, and any other object no commit is known to have recorded.
	// The loop's goroutine adds; settle reads once Execute returned.
	written []string
	// span is the attempt's span; nil without tracing.
	span trace.Span
	// heldFrom is when the last claim or renewal of the lease that
	// succeeded was sent: the lease lasts at least a lease from then, by
	// the worker's monotonic clock, which runs on while the process is
	// stopped.
	heldFrom atomic.Pointer[time.Time]
}

// newAttempt is the attempt of claim c, which was sent at sent.
func newAttempt(w *Worker, c run.Claimed, sent time.Time) *attempt {
	ctx, span := traceAttempt(context.Background(), w.opts.Tracer, c)
	ctx, cancel := context.WithCancelCause(ctx)
	a := &attempt{w: w, c: c, ctx: ctx, cancelFn: cancel, span: span, log: w.log.With("run_id", c.Lease.RunID, "attempt_id", c.Lease.AttemptID,
		"attempt", c.Lease.Number, "workspace_id", c.Lease.WorkspaceID, "thread_id", c.Lease.ThreadID)}
	a.step.Store(c.Run.Step)
	a.heldFrom.Store(&sent)
	return a
}

// wrote notes a checkpoint key the attempt wrote or may have written, for
// its end to delete unless it is the run's current checkpoint.
func (a *attempt) wrote(key string) {
	if !slices.Contains(a.written, key) {
		a.written = append(a.written, key)
	}
}

// requestStop asks the attempt to stop after its current step.
func (a *attempt) requestStop() { a.stop.Store(true) }

// cancel cuts the attempt short for cause.
func (a *attempt) cancel(cause error) { a.cancelFn(cause) }

// run executes the attempt and records how it ended.
func (a *attempt) run() {
	defer a.cancelFn(nil)
	stopRenew := make(chan struct{})
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		a.renew(stopRenew)
	}()
	out, err := a.w.exec.Execute(a.ctx, a)
	close(stopRenew)
	<-renewed
	a.settle(out, err)
	endAttemptSpan(a.span, out, err, context.Cause(a.ctx))
}

// renew extends the lease every third of it. A refused renewal, or none
// that succeeded for most of a lease, cuts the attempt short: the lease is
// (or may soon be) gone, so nothing more of this attempt may be written. A
// cancel the renewal learns of stops the attempt too.
func (a *attempt) renew(stop <-chan struct{}) {
	lease := a.w.opts.Lease
	t := time.NewTicker(lease / 3)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-a.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(a.ctx, lease/3)
		sent := time.Now()
		r, err := a.w.runs.Renew(ctx, a.c.Lease, lease)
		cancel()
		switch {
		case errors.Is(err, run.ErrLeaseLost):
			a.cancel(errLeaseLost)
			return
		case err != nil:
			if a.ctx.Err() != nil {
				return
			}
			a.log.Warn("lease renewal failed", "error", err.Error())
			if time.Since(*a.heldFrom.Load()) > lease-lease/6 {
				a.cancel(errLeaseLost)
				return
			}
		case r.CancelRequested:
			a.cancel(errCancelRequested)
			return
		default:
			a.heldFrom.Store(&sent)
		}
	}
}

// confirmLease answers whether the attempt may still act for its run,
// before a step's tools run: they reach outside svc, where no fence
// refuses a stale worker. While the last claim or renewal that succeeded
// was sent at most half a lease ago it may, at no cost. Later (the process
// was stopped, say, while the model's answer arrived, or renewals fail)
// the lease is renewed first: a lease lost, or a cancel, cuts the attempt
// short and no tool runs; a renewal that fails otherwise is the step's
// error.
func (a *attempt) confirmLease(ctx context.Context) error {
	lease := a.w.opts.Lease
	if time.Since(*a.heldFrom.Load()) <= lease/2 {
		return nil
	}
	sent := time.Now()
	r, err := a.w.runs.Renew(ctx, a.c.Lease, lease)
	switch {
	case errors.Is(err, run.ErrLeaseLost):
		a.cancel(errLeaseLost)
		return err
	case err != nil:
		return fmt.Errorf("renew the lease before the step's tools: %w", err)
	case r.CancelRequested:
		a.cancel(errCancelRequested)
		return errCancelRequested
	}
	a.heldFrom.Store(&sent)
	return nil
}

// settle ends the attempt as its execution ended.
func (a *attempt) settle(out agentloop.Outcome, err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(a.ctx), settleTimeout)
	defer cancel()
	l, step := a.c.Lease, a.step.Load()
	l.Written = a.written
	cause := context.Cause(a.ctx)
	log := a.log
	var end string
	var serr error
	defer func() { a.w.opts.Metrics.ended(end, serr) }()
	usage := run.Usage{InputTokens: int64(out.State.Usage.InputTokens), OutputTokens: int64(out.State.Usage.OutputTokens)}
	var rl *agentloop.RetryLaterError
	var se *agentloop.SuspendError
	switch {
	case errors.Is(err, run.ErrLeaseLost) || errors.Is(cause, errLeaseLost):
		log.Warn("attempt lost its lease; it stops without touching the run")
		end = endLeaseLost
		return
	case errors.Is(cause, errCancelRequested):
		end = endFinished
		serr = a.w.runs.Finish(ctx, l, run.StatusCancelled, &run.Failure{Code: "cancelled", Message: "the run was cancelled"}, usage, step)
	case errors.Is(err, agentloop.ErrStopped) || errors.Is(cause, errDrained):
		end = endHandedOff
		serr = a.w.runs.HandOff(ctx, l, 0, step, "the worker shut down; the run continues from its last checkpoint")
	case errors.As(err, &se):
		asks := make([]run.ApprovalRequest, len(se.Approvals))
		for i, c := range se.Approvals {
			asks[i] = run.ApprovalRequest{CallID: c.ID, Name: c.Name, Arguments: c.Arguments}
		}
		end = endSuspended
		serr = a.w.runs.Suspend(ctx, l, se.Calls, asks, run.ApprovalTerms{Timeout: se.Terms.Timeout, OnTimeout: se.Terms.OnTimeout}, step)
	case errors.As(err, &rl):
		end = endHandedOff
		serr = a.w.runs.HandOff(ctx, l, rl.Delay, step, "the model's vendor asked to retry later: "+rl.Err.Error())
	case err != nil:
		if f, ok := errors.AsType[*run.Failure](err); ok {
			// The run's own configuration cannot run (a disabled model, say).
			end = endFinished
			serr = a.w.runs.Finish(ctx, l, run.StatusFailed, f, usage, step)
			break
		}
		if cause != nil && errors.Is(err, context.Canceled) {
			// The attempt was cut short for cause (a step that could not be
			// written, say): that is the reason, not the cancellation.
			err = cause
		}
		// The cause is svc's own (the database, the object store, a
		// tool's backend): its text goes to the log under the run's id,
		// never to the run's tenant, who reads the attempt's error.
		log.Warn("attempt failed; the run is retried", "error", err.Error())
		end = endRetried
		serr = a.w.runs.Retry(ctx, l, step, internalFailure)
	case out.Failure != nil:
		if out.Failure.Cause != nil {
			log.Warn("run failed", "code", out.Failure.Code, "error", out.Failure.Cause.Error())
		}
		end = endFinished
		serr = a.w.runs.Finish(ctx, l, run.StatusFailed, &run.Failure{Code: out.Failure.Code, Message: out.Failure.Message}, usage, step)
	default:
		end = endFinished
		serr = a.w.runs.Finish(ctx, l, run.StatusSucceeded, nil, usage, step)
	}
	if serr != nil {
		log.Warn("could not record the attempt's end; the lease sweep will", "error", serr.Error())
	}
}

// internalFailure is what a run's tenant reads of an attempt that failed
// for a reason of svc's own; the log has the cause under the run's id.
const internalFailure = "an internal error ended the attempt (its cause is logged with the run's id)"
