package sweep

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/metrics"
	"github.com/svcdev/svc/internal/supervisor"
)

// minLease keeps claims meaningful for very short intervals.
const minLease = time.Second

// Sweep is one periodic maintenance job.
type Sweep struct {
	// Name identifies the sweep in claims, logs and metrics, e.g. "expire_leases".
	Name string
	// Interval is the time between passes, from the sweep's configuration key.
	Interval time.Duration
	// Run does one pass. It must return when ctx ends and should do its work in
	// short transactions, so that an interrupted pass loses nothing.
	Run func(ctx context.Context) error
}

// Pass is the outcome of one tick of a sweep on this replica.
type Pass struct {
	Sweep string
	Ran   bool  // false when another replica held the claim
	Err   error // the pass's error, or the claim's
}

// Runner runs registered sweeps under database claims.
type Runner struct {
	pool    *pgxpool.Pool
	q       *db.Queries
	owner   string
	log     *slog.Logger
	metrics *metrics.Metrics
	sweeps  []Sweep

	// OnPassFunc, when set, is called after every tick; tests wait on it instead of sleeping.
	OnPassFunc func(Pass)
}

// NewRunner returns a runner whose claims name owner, a replica id unique to this process.
func NewRunner(pool *pgxpool.Pool, owner string, log *slog.Logger, m *metrics.Metrics) *Runner {
	return &Runner{pool: pool, q: db.New(), owner: owner, log: log, metrics: m}
}

// Register adds a sweep. Register every sweep before taking Tasks.
func (r *Runner) Register(s Sweep) {
	if s.Name == "" || s.Interval <= 0 || s.Run == nil {
		panic(fmt.Sprintf("sweep %q: name, positive interval and run are required", s.Name))
	}
	r.sweeps = append(r.sweeps, s)
}

// Sweeps lists the registered sweeps' names.
func (r *Runner) Sweeps() []string {
	names := make([]string, len(r.sweeps))
	for i, s := range r.sweeps {
		names[i] = s.Name
	}
	return names
}

// Tasks returns one supervisor task per sweep.
func (r *Runner) Tasks() []supervisor.Task {
	tasks := make([]supervisor.Task, len(r.sweeps))
	for i, s := range r.sweeps {
		tasks[i] = supervisor.Task{Name: "sweep " + s.Name, Run: func(ctx context.Context) error { return r.loop(ctx, s) }}
	}
	return tasks
}

// loop ticks every interval until ctx ends. The first tick comes after a random
// part of the interval, so replicas started together do not contend in step.
func (r *Runner) loop(ctx context.Context, s Sweep) error {
	timer := time.NewTimer(rand.N(s.Interval))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		r.tick(ctx, s)
		timer.Reset(s.Interval)
	}
}

// RunOnce claims the named sweep and runs one pass now, as a tick would.
func (r *Runner) RunOnce(ctx context.Context, name string) (Pass, error) {
	for _, s := range r.sweeps {
		if s.Name == name {
			return r.tick(ctx, s), nil
		}
	}
	return Pass{}, fmt.Errorf("no sweep named %q", name)
}

func (r *Runner) tick(ctx context.Context, s Sweep) Pass {
	p := r.pass(ctx, s)
	result := "ok"
	switch {
	case p.Err != nil:
		result = "error"
		if ctx.Err() == nil {
			r.log.Error("sweep pass failed; retrying next interval", "sweep", s.Name, "error", p.Err.Error())
		}
	case !p.Ran:
		result = "skipped"
	}
	r.metrics.SweepPasses.WithLabelValues(s.Name, result).Inc()
	if r.OnPassFunc != nil {
		r.OnPassFunc(p)
	}
	return p
}

func (r *Runner) pass(ctx context.Context, s Sweep) Pass {
	lease := max(s.Interval, minLease)
	// The claim expires one lease after the database's now(), which comes after this
	// moment; counting the pass's deadline from here, not from when the claim
	// returns, ends the pass before the claim does however long the claim took.
	claimSent := time.Now()
	_, err := r.q.SweepClaim(ctx, r.pool, db.SweepClaimParams{Name: s.Name, Owner: r.owner, LeaseSeconds: lease.Seconds()})
	if dbx.IsNotFound(err) {
		return Pass{Sweep: s.Name}
	}
	if err != nil {
		return Pass{Sweep: s.Name, Err: fmt.Errorf("claim sweep: %w", err)}
	}

	// The pass must end before the claim does, so no other replica overlaps it.
	passCtx, cancel := context.WithDeadline(ctx, claimSent.Add(lease))
	defer cancel()
	start := time.Now()
	err = runGuarded(passCtx, s.Run)
	r.metrics.SweepDuration.WithLabelValues(s.Name).Observe(time.Since(start).Seconds())

	var lastErr *string
	if err != nil {
		msg := err.Error()
		lastErr = &msg
	}
	finishCtx, cancelFinish := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancelFinish()
	if ferr := r.q.SweepFinish(finishCtx, r.pool, db.SweepFinishParams{Name: s.Name, Owner: r.owner, LastError: lastErr}); ferr != nil && err == nil {
		err = fmt.Errorf("record sweep outcome: %w", ferr)
	}
	return Pass{Sweep: s.Name, Ran: true, Err: err}
}

// runGuarded turns a panicking pass into a failed one, so one bad pass does not
// stop the sweep for good.
func runGuarded(ctx context.Context, run func(context.Context) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	return run(ctx)
}
