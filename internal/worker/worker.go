// Package worker is the worker role: it claims accepted runs while it has
// free slots, holds each run's lease in an attempt that it renews well
// before it ends, executes the run step by step (package agentloop) and
// records a checkpoint after every step (docs/decisions/0027-runs-and-workers.md).
//
// Every write of an attempt is fenced by its lease (package run), so a
// worker that lost its lease (it was stopped too long, or the database was
// out of reach) cannot change the run any more; it stops the attempt as soon
// as it learns so. On shutdown it stops claiming, lets running attempts
// finish their step and hand the run off uncharged, and after
// worker.drain_seconds hands off whatever still runs from its last
// checkpoint.
package worker

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

	"github.com/svcdev/svc/internal/pglisten"
	"github.com/svcdev/svc/internal/run"
)

// Options configure a Worker.
type Options struct {
	// ID names this worker in attempts (the replica id).
	ID string
	// Slots is how many attempts run at once (worker.slots).
	Slots int
	// Lease is an attempt's lease (worker.lease_seconds); it is renewed every
	// third of it.
	Lease time.Duration
	// Drain is how long a stopping worker lets attempts reach a checkpoint
	// (worker.drain_seconds).
	Drain time.Duration
	// Poll is how often the worker looks for runs without a notification.
	Poll time.Duration
	// Gather is how long, while runs wait, a freed slot waits for more
	// attempts to end before the worker claims, so that one claim takes a
	// quarter of the slots rather than one run each
	// (worker.claim_gather_ms); zero claims for every freed slot.
	Gather time.Duration
	// Metrics count the worker's slots and attempts; nil counts nothing.
	Metrics *Metrics
	// Tracer, when set, makes a span of each attempt (tracing.go).
	Tracer trace.Tracer
}

// Worker claims and executes runs.
type Worker struct {
	pool *pgxpool.Pool
	runs *run.Service
	exec *Executor
	opts Options
	log  *slog.Logger

	wake chan struct{}
	// notices hears that runs became claimable or were cancelled.
	notices *pglisten.Listener

	mu       sync.Mutex
	active   map[string]*attempt // by run id
	draining bool
	wg       sync.WaitGroup
}

// New returns a worker.
func New(pool *pgxpool.Pool, runs *run.Service, exec *Executor, opts Options, log *slog.Logger) *Worker {
	if opts.Slots <= 0 {
		opts.Slots = 1
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	w := &Worker{pool: pool, runs: runs, exec: exec, opts: opts, log: log,
		wake: make(chan struct{}, 1), active: map[string]*attempt{}}
	opts.Metrics.slots(opts.Slots)
	w.notices = pglisten.New(pool, pglisten.Config{
		Channels: []string{"svc_runs", "svc_run_cancel"}, NotifyFunc: w.notified, ListenFunc: w.Wake, Subject: "run",
	}, log)
	return w
}

// Wake makes the claim loop look for runs now.
func (w *Worker) Wake() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Active is the number of attempts running.
func (w *Worker) Active() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.active)
}

// Run claims and executes runs until ctx ends, then drains: it claims no
// more, asks every attempt to stop after its step, and after the drain time
// cuts the rest short; each hands its run off uncharged. It returns when no
// attempt is left.
func (w *Worker) Run(ctx context.Context) error {
	listenCtx, stopListen := context.WithCancel(context.WithoutCancel(ctx))
	var lw sync.WaitGroup
	lw.Add(1)
	go func() {
		defer lw.Done()
		w.notices.Run(listenCtx)
	}()
	defer func() {
		stopListen()
		lw.Wait()
	}()
	// Claim only once cancel notifications are heard (or after a moment
	// without them: the lease renewal still learns of a cancel).
	select {
	case <-w.notices.Listening():
	case <-time.After(2 * time.Second):
	case <-ctx.Done():
	}
	w.claimLoop(ctx)
	w.drain()
	return nil
}

func (w *Worker) claimLoop(ctx context.Context) {
	tick := time.NewTicker(w.opts.Poll)
	defer tick.Stop()
	for {
		waiting := w.claim(ctx)
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		case <-tick.C:
		}
		if waiting {
			w.gather(ctx)
		}
	}
}

// claim takes as many runs as there are free slots, fairly across
// workspaces and within worker.workspace_max_running (run.Service.Claim).
// It answers whether runs may still be waiting: the last claim filled
// every free slot.
func (w *Worker) claim(ctx context.Context) bool {
	for ctx.Err() == nil {
		free := w.opts.Slots - w.Active()
		if free <= 0 {
			return true
		}
		sent := time.Now()
		claims, err := w.runs.Claim(ctx, w.opts.ID, free, w.opts.Lease)
		if err != nil {
			if ctx.Err() == nil {
				w.log.Warn("claim runs failed", "error", err.Error())
			}
			return false
		}
		for _, c := range claims {
			w.start(c, sent)
		}
		if len(claims) < free {
			return false
		}
	}
	return false
}

// gather waits, for at most Options.Gather, until a quarter of the slots
// are free. A claim costs about the same for one run as for many, so while
// runs wait, the worker claims in batches instead of once per ended
// attempt (docs/decisions/0047-gathered-claims.md). A run accepted
// meanwhile waits at most Gather longer.
func (w *Worker) gather(ctx context.Context) {
	want := max(1, w.opts.Slots/4)
	if w.opts.Gather <= 0 || w.opts.Slots-w.Active() >= want {
		return
	}
	t := time.NewTimer(w.opts.Gather)
	defer t.Stop()
	for w.opts.Slots-w.Active() < want {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			return
		case <-w.wake:
		}
	}
}

// start runs one claimed attempt in its own goroutine; the claim was sent
// at sent. Its context is not the claim loop's: stopping the worker drains
// attempts rather than cutting them off.
func (w *Worker) start(c run.Claimed, sent time.Time) {
	a := newAttempt(w, c, sent)
	w.mu.Lock()
	w.active[c.Lease.RunID] = a
	w.wg.Add(1)
	w.mu.Unlock()
	w.opts.Metrics.started()
	go func() {
		defer func() {
			w.opts.Metrics.done()
			w.mu.Lock()
			delete(w.active, c.Lease.RunID)
			w.mu.Unlock()
			w.wg.Done()
			w.Wake() // a slot is free
		}()
		a.run()
	}()
}

// drain asks every attempt to stop after its current step, waits up to the
// drain time, then cuts the rest short; every one hands off.
func (w *Worker) drain() {
	w.mu.Lock()
	w.draining = true
	for _, a := range w.active {
		a.requestStop()
	}
	n := len(w.active)
	w.mu.Unlock()
	if n > 0 {
		w.log.Info("draining attempts", "attempts", n, "drain", w.opts.Drain.String())
	}
	done := make(chan struct{})
	go func() {
		w.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return
	case <-time.After(w.opts.Drain):
	}
	w.mu.Lock()
	for _, a := range w.active {
		a.cancel(errDrained)
	}
	w.mu.Unlock()
	<-done
}

// cancelRun stops the attempt of run runID, if this worker runs it, because
// a cancel was asked for.
func (w *Worker) cancelRun(runID string) {
	w.mu.Lock()
	a := w.active[runID]
	w.mu.Unlock()
	if a != nil {
		a.cancel(errCancelRequested)
	}
}

// notified wakes the claim loop when runs become claimable (svc_runs) and
// stops attempts whose run was cancelled (svc_run_cancel). Notifications
// only hurry things: the poll and the lease renewal find the same facts, and
// each time the listener starts listening the claim loop is woken, for
// runs accepted while it did not.
func (w *Worker) notified(channel, payload string) {
	switch channel {
	case "svc_runs":
		w.Wake()
	case "svc_run_cancel":
		w.cancelRun(payload)
	}
}

// Why an attempt's context ended.
var (
	errDrained         = errors.New("the worker is shutting down")
	errCancelRequested = errors.New("a cancel was asked for")
	errLeaseLost       = errors.New("the attempt lost its lease")
)
