package outbox

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/config"
)

// Backoff bounds. The delay before retry n (after n failed attempts) is
// BackoffBase·2^(n-1), at most MaxBackoff, of which a random quarter is taken
// off (jitter), so replicas retrying the same endpoint spread out.
const (
	BackoffBase = 10 * time.Second
	MaxBackoff  = time.Hour
)

// reclaimEvery is how often a pass waiting for its attempts claims again
// when nothing else prompts it, for endpoints whose pause has ended.
const reclaimEvery = time.Second

// settleTimeout bounds the write of a batch of outcomes, which must happen even
// while the sender stops.
const settleTimeout = 10 * time.Second

// Engine delivers the outbox: every replica's deliver_outbox pass claims due
// deliveries of each kind that has a Deliverer, leases them, delivers up to
// parallel at once and records each outcome. Leases make replicas safe to run
// side by side: a row is attempted by one sender at a time, and a sender that
// dies loses its rows when their leases end. Run drives the passes (run.go).
type Engine struct {
	// Scan is the longest Run waits between passes when nothing wakes it
	// (control.scan_seconds; its default unless set). Set it before Run.
	Scan time.Duration
	// PassFunc, when set, is told of every pass Run makes; the process
	// counts them with the sweeps' metrics. Set it before Run.
	PassFunc func(Pass)
	// Tracer, when set, makes a span of every delivery attempt
	// (tracing.go). Set it before Run.
	Tracer trace.Tracer

	pool       *pgxpool.Pool
	q          *db.Queries
	cfg        config.Outbox
	replica    string
	log        *slog.Logger
	metrics    *Metrics
	deliverers map[string]Deliverer
	wake       chan struct{}
	// kicks wake the running pass of each kind (see drain).
	kicks map[string]chan struct{}
	held  atomic.Bool
}

// NewEngine returns an engine for this replica. Register each kind's deliverer
// before the first pass.
func NewEngine(pool *pgxpool.Pool, cfg config.Outbox, replica string, log *slog.Logger, m *Metrics) *Engine {
	e := &Engine{
		Scan: time.Duration(config.Default().Control.ScanSeconds) * time.Second,
		pool: pool, q: db.New(), cfg: cfg, replica: replica, log: log, metrics: m,
		deliverers: map[string]Deliverer{}, wake: make(chan struct{}, 1), kicks: map[string]chan struct{}{},
	}
	for _, kind := range Kinds {
		e.kicks[kind] = make(chan struct{}, 1)
	}
	return e
}

// Register sets the deliverer of kind. Kinds without one are left pending.
func (e *Engine) Register(kind string, d Deliverer) {
	e.deliverers[kind] = d
}

// Wake asks for a deliver pass now rather than at the next interval; a pass
// already running claims again at once.
func (e *Engine) Wake() {
	signal(e.wake)
	for _, kick := range e.kicks {
		signal(kick)
	}
}

// signal sends on c unless a signal is waiting already.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Metrics returns the engine's collectors.
func (e *Engine) Metrics() *Metrics { return e.metrics }

// Deliver is one deliver_outbox pass: for every kind with a deliverer, at the
// same time, it claims and delivers due rows until none are left. When ctx ends
// it stops claiming, gives back the rows it has not finished and returns.
func (e *Engine) Deliver(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, kind := range Kinds {
		d, ok := e.deliverers[kind]
		if !ok {
			continue
		}
		g.Go(func() error { return e.drain(gctx, kind, d) })
	}
	return g.Wait()
}

// drain delivers kind until a claim finds fewer than batch due rows. For a
// kind with isolation (webhooks) it goes on while its attempts run: rows held
// back because their subscription had deliveries in flight are claimed as
// soon as an outcome is recorded, and new rows as soon as the engine is
// woken, so a pass never waits for its slowest attempt before it claims more.
func (e *Engine) drain(ctx context.Context, kind string, d Deliverer) error {
	p := e.cfg.Policy(kind)
	iso := isolationOf(e.cfg, kind)
	results := make(chan settlement, p.Batch)
	recorded := make(chan struct{}, 1)
	var unsettled atomic.Int64 // rows claimed whose outcome is not recorded yet
	flushed := make(chan error, 1)
	go func() {
		flushed <- e.flush(ctx, kind, results, func(n int) {
			unsettled.Add(-int64(n))
			signal(recorded)
		})
	}()

	var wg sync.WaitGroup
	l := newLanes(p.Parallel, iso)
	err := func() error {
		for ctx.Err() == nil {
			// Read before the claim: an outcome recorded while it runs may
			// free rows the claim did not see; it signals recorded.
			outstanding := unsettled.Load()
			rows, err := e.claim(ctx, kind, p, iso)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("claim %s deliveries: %w", kind, err)
			}
			unsettled.Add(int64(len(rows)))
			for _, row := range rows {
				c := claimed(row)
				if c.Attempt > p.MaxAttempts {
					results <- expired(c, int(row.AttemptNumber))
					continue
				}
				lane, ok := l.enter(ctx, c.SubscriptionID)
				if !ok {
					results <- giveBack(c, int(row.AttemptNumber))
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					results <- e.run(ctx, d, p, l, lane, c, int(row.AttemptNumber))
				}()
			}
			if len(rows) == p.Batch {
				continue
			}
			if iso.inFlight == 0 || (len(rows) == 0 && outstanding == 0) {
				return nil
			}
			select {
			case <-recorded:
			case <-e.kicks[kind]:
			case <-time.After(reclaimEvery):
			case <-ctx.Done():
			}
		}
		return nil
	}()
	wg.Wait()
	close(results)
	if ferr := <-flushed; err == nil {
		err = ferr
	}
	return err
}

// run makes one attempt in the lane the caller entered. An attempt in a
// parallel slot still running after the kind's slow threshold moves to a slow
// place when one is free, giving its slot to the next row: an endpoint that
// never answers holds a slow place, not a slot the healthy endpoints'
// deliveries need.
func (e *Engine) run(ctx context.Context, d Deliverer, p config.OutboxPolicy, l *lanes, lane lane, c Claimed, number int) settlement {
	if lane == inSlot && l.slowAfter <= 0 {
		defer l.leave(inSlot, c.SubscriptionID)
		return e.attempt(ctx, d, p, c, number)
	}
	done := make(chan settlement, 1)
	go func() { done <- e.attempt(ctx, d, p, c, number) }()
	if lane == inSlot {
		timer := time.NewTimer(l.slowAfter)
		select {
		case s := <-done:
			timer.Stop()
			l.leave(inSlot, c.SubscriptionID)
			return s
		case <-timer.C:
		}
		if !l.moveSlow() {
			s := <-done
			l.leave(inSlot, c.SubscriptionID)
			return s
		}
		e.metrics.slowAttempt(c.Kind)
	}
	s := <-done
	l.leave(inSlow, c.SubscriptionID)
	return s
}

// attempt runs one delivery within its lease and turns what came of it into a
// settlement. An attempt cut short because the sender is stopping is given
// back uncharged; one that ran out of its lease is a failure.
func (e *Engine) attempt(ctx context.Context, d Deliverer, p config.OutboxPolicy, c Claimed, number int) (s settlement) {
	lease := time.Duration(p.LeaseSeconds) * time.Second
	actx, span := e.traceAttempt(ctx, c)
	defer func() { endAttemptSpan(span, s) }()
	actx, cancel := context.WithTimeout(actx, lease*9/10)
	defer cancel()
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			e.log.Error("outbox deliverer panicked", "kind", c.Kind, "delivery", c.ID, "panic", fmt.Sprint(r))
			s = settle(c, number, p, start, Failed(fmt.Errorf("the deliverer failed unexpectedly")))
		}
	}()
	out := d.Deliver(actx, c)
	if out.Err != nil && ctx.Err() != nil {
		return giveBack(c, number)
	}
	if out.Err != nil && actx.Err() != nil && !out.Permanent {
		out.Err = fmt.Errorf("no outcome within the %s lease: %w", lease*9/10, out.Err)
	}
	return settle(c, number, p, start, out)
}

// settle decides what an attempt's outcome does to its delivery.
func settle(c Claimed, number int, p config.OutboxPolicy, start time.Time, out Outcome) settlement {
	s := settlement{
		id: c.ID, kind: c.Kind, number: number, charged: true, started: start,
		duration: time.Since(start), statusCode: out.StatusCode, response: Snippet([]byte(out.Response)),
		enqueued: sinceEnqueued(c, number),
	}
	switch {
	case out.Cancel:
		s.status, s.result, s.errText = StatusCancelled, StatusCancelled, out.Reason
	case out.Err == nil:
		s.status, s.result = StatusDelivered, StatusDelivered
	case out.Permanent || c.Attempt >= p.MaxAttempts:
		s.status, s.result, s.errText = StatusDead, "failed", out.Err.Error()
	default:
		s.status, s.result, s.errText = StatusPending, "failed", out.Err.Error()
		s.retry = Backoff(BackoffBase, c.Attempt)
	}
	return s
}

// expired settles a row whose previous sender lost its lease on the last
// attempt the kind allows: that attempt may have been delivered, but it was
// used, so the delivery is dead.
func expired(c Claimed, number int) settlement {
	return settlement{
		id: c.ID, kind: c.Kind, number: number, charged: true, started: time.Now(),
		status: StatusDead, result: "failed",
		errText: "the lease of its last allowed attempt ended before the sender recorded an outcome",
	}
}

// giveBack returns a claimed row to the queue at once, uncharged.
func giveBack(c Claimed, number int) settlement {
	return settlement{id: c.ID, kind: c.Kind, number: number, status: StatusPending, started: time.Now()}
}

// Backoff is the delay after the attempt-th failed attempt with the given
// base: exponential, capped at MaxBackoff, less up to a quarter of jitter.
func Backoff(base time.Duration, attempt int) time.Duration {
	d := MaxBackoff
	if attempt < 1 {
		attempt = 1
	}
	if attempt <= 32 {
		if exp := base << (attempt - 1); exp > 0 && exp < MaxBackoff {
			d = exp
		}
	}
	return d - rand.N(d/4+1)
}

// claimed converts a claimed row.
func claimed(row db.OutboxClaimRow) Claimed {
	return Claimed{
		ID: row.ID, Kind: row.Kind, WorkspaceID: deref(row.WorkspaceID), SubscriptionID: deref(row.SubscriptionID),
		EventType: deref(row.EventType), Payload: row.Payload, Sealed: row.Sealed, Attempt: int(row.Attempts),
		CreatedAt: row.CreatedAt, ClaimedAt: row.ClaimedAt,
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// settlement is one attempt's effect on its delivery, waiting to be written.
type settlement struct {
	id, kind   string
	number     int
	status     string // the delivery's next status; pending to retry or give back
	retry      time.Duration
	charged    bool
	result     string // the attempt's result: delivered, failed or cancelled
	started    time.Time
	duration   time.Duration
	statusCode int
	response   string
	errText    string
	// enqueued is the time from the delivery's enqueueing to this attempt's
	// claim; negative when unknown (sinceEnqueued).
	enqueued time.Duration
}

// maxSettleBatch bounds the outcomes written by one statement.
const maxSettleBatch = 256

// flush writes settlements as they arrive, as many at a time as are waiting,
// until results is closed. A failed write is logged and the rest go on: those
// rows' leases end and they are delivered again (at least once).
// recorded is called after each write with the number of outcomes it
// handled, whether or not the write succeeded.
func (e *Engine) flush(ctx context.Context, kind string, results <-chan settlement, recorded func(n int)) error {
	var firstErr error
	batch := make([]settlement, 0, maxSettleBatch)
	for s := range results {
		batch = append(batch[:0], s)
	more:
		for len(batch) < maxSettleBatch {
			select {
			case s, ok := <-results:
				if !ok {
					break more
				}
				batch = append(batch, s)
			default:
				break more
			}
		}
		if err := e.write(ctx, batch); err != nil {
			e.log.Error("recording outbox outcomes failed; their deliveries will be retried", "kind", kind, "count", len(batch), "error", err.Error())
			if firstErr == nil {
				firstErr = err
			}
		}
		recorded(len(batch))
	}
	return firstErr
}

// write records a batch of settlements in one statement and counts them.
func (e *Engine) write(ctx context.Context, batch []settlement) error {
	p := db.OutboxSettleParams{
		Replica: e.replica, EndpointFailures: int32(e.cfg.WebhookEndpointFailures),
		BackoffBaseSeconds: BackoffBase.Seconds(), MaxBackoffSeconds: MaxBackoff.Seconds(),
	}
	for _, s := range batch {
		p.Ids = append(p.Ids, s.id)
		p.Numbers = append(p.Numbers, int32(s.number))
		p.Statuses = append(p.Statuses, s.status)
		p.RetrySeconds = append(p.RetrySeconds, s.retry.Seconds())
		p.Charged = append(p.Charged, s.charged)
		p.StartedAt = append(p.StartedAt, s.started)
		p.DurationMs = append(p.DurationMs, int32(min(s.duration.Milliseconds(), 1<<31-1)))
		p.Results = append(p.Results, s.result)
		p.StatusCodes = append(p.StatusCodes, int32(s.statusCode))
		p.Responses = append(p.Responses, s.response)
		p.Errors = append(p.Errors, s.errText)
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	recorded, err := e.q.OutboxSettle(wctx, e.pool, p)
	if err != nil {
		return fmt.Errorf("record outcomes: %w", err)
	}
	kept := make(map[string]bool, len(recorded))
	for _, id := range recorded {
		kept[id] = true
	}
	for _, s := range batch {
		result := s.result
		switch {
		case !kept[s.id]:
			result = "stale" // its lease had ended and the row moved on
		case !s.charged:
			result = "given_back"
		case s.status == StatusDead:
			result = StatusDead
		}
		e.metrics.attempt(s.kind, result)
		e.metrics.timed(s, result)
	}
	return nil
}
