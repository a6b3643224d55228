package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/config"
)

// Metrics are the outbox's Prometheus collectors. The gauges are computed from
// the database by Observe, so every control replica exports the same values
// and the maximum across replicas is right; the attempt counter counts this
// replica's attempts.
type Metrics struct {
	// BacklogAlert is 1 while some kind's backlog condition has held for its
	// backlog_alert_seconds; Dead is 1 while any dead delivery is retained.
	BacklogAlert prometheus.Gauge
	Dead         prometheus.Gauge

	KindAlert  *prometheus.GaugeVec
	Pending    *prometheus.GaugeVec
	OldestDue  *prometheus.GaugeVec
	DeadByKind *prometheus.GaugeVec
	Attempts   *prometheus.CounterVec
	// SlowAttempts counts the attempts that ran long enough to give their
	// parallel slot to the next delivery (webhooks).
	SlowAttempts *prometheus.CounterVec
	// AttemptDuration observes this replica's attempts; DeliveryLatency
	// the time from a delivery's enqueueing (the event, for a webhook) to
	// its delivery.
	AttemptDuration *prometheus.HistogramVec
	DeliveryLatency *prometheus.HistogramVec
}

// AttemptBuckets and LatencyBuckets are the bounds, in seconds, of
// svc_outbox_attempt_duration_seconds and svc_outbox_delivery_latency_seconds:
// an attempt lasts at most its lease; a delivery that fails waits 10 s, 20 s,
// 40 s... between attempts (docs/decisions/0058-metrics-and-run-logs.md).
var (
	AttemptBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
	LatencyBuckets = []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600}
)

// NewMetrics registers the outbox collectors with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		BacklogAlert: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "svc_outbox_backlog_alert",
			Help: "1 when some outbox kind's pending count exceeded backlog_count, or its oldest due delivery was older than backlog_age_seconds, continuously for backlog_alert_seconds; else 0.",
		}),
		Dead: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "svc_outbox_dead",
			Help: "1 while any dead outbox delivery is retained; else 0.",
		}),
		KindAlert: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "svc_outbox_kind_backlog_alert",
			Help: "svc_outbox_backlog_alert for one outbox kind.",
		}, []string{"kind"}),
		Pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "svc_outbox_pending",
			Help: "Pending outbox deliveries, by kind (including those being attempted).",
		}, []string{"kind"}),
		OldestDue: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "svc_outbox_oldest_due_seconds",
			Help: "Age of the oldest outbox delivery that is due and not being attempted, by kind; 0 when none.",
		}, []string{"kind"}),
		DeadByKind: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "svc_outbox_dead_deliveries",
			Help: "Dead outbox deliveries still retained, by kind.",
		}, []string{"kind"}),
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_outbox_attempts_total",
			Help: "Outbox delivery attempts this replica finished, by kind and result (delivered, failed, dead, cancelled, given_back, stale).",
		}, []string{"kind", "result"}),
		SlowAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_outbox_slow_attempts_total",
			Help: "Outbox delivery attempts this replica ran past outbox.webhook_slow_attempt_ms and moved out of their parallel slot, by kind.",
		}, []string{"kind"}),
	}
	m.AttemptDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "svc_outbox_attempt_duration_seconds",
		Help:    "Duration of the outbox delivery attempts this replica made (a webhook's request and answer), by kind.",
		Buckets: AttemptBuckets,
	}, []string{"kind"})
	m.DeliveryLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "svc_outbox_delivery_latency_seconds",
		Help:    "Time from an outbox delivery's enqueueing (for a webhook, the event) to the end of the attempt that delivered it, by kind; redelivered deliveries and those with an attempt given back are left out.",
		Buckets: LatencyBuckets,
	}, []string{"kind"})
	reg.MustRegister(m.BacklogAlert, m.Dead, m.KindAlert, m.Pending, m.OldestDue, m.DeadByKind, m.Attempts, m.SlowAttempts,
		m.AttemptDuration, m.DeliveryLatency)
	for _, kind := range Kinds {
		m.SlowAttempts.WithLabelValues(kind) // exported at 0 before the first
	}
	return m
}

func (m *Metrics) slowAttempt(kind string) {
	if m != nil {
		m.SlowAttempts.WithLabelValues(kind).Inc()
	}
}

func (m *Metrics) attempt(kind, result string) {
	if m != nil {
		m.Attempts.WithLabelValues(kind, result).Inc()
	}
}

// timed observes the duration of settlement s's attempt, which ended with
// result, and, when it delivered, the delivery's latency.
func (m *Metrics) timed(s settlement, result string) {
	if m == nil || result == "given_back" || result == "stale" {
		return
	}
	m.AttemptDuration.WithLabelValues(s.kind).Observe(s.duration.Seconds())
	if result == StatusDelivered && s.enqueued >= 0 {
		m.DeliveryLatency.WithLabelValues(s.kind).Observe((s.enqueued + s.duration).Seconds())
	}
}

// sinceEnqueued is the time from c's enqueueing to its claim for attempt
// number (every attempt's number, across rounds), by the database's clock;
// -1 when that number is not the round's attempt: an administrator
// redelivered it (its enqueueing is long past) or a stopping sender gave
// an attempt back.
func sinceEnqueued(c Claimed, number int) time.Duration {
	if number != c.Attempt || c.ClaimedAt.IsZero() {
		return -1
	}
	return max(c.ClaimedAt.Sub(c.CreatedAt), 0)
}

// KindState is one kind's observed state.
type KindState struct {
	Pending          int64
	OldestDueSeconds float64
	Dead             int64
	Breached         bool // the backlog condition holds now
	Alert            bool // and has held for backlog_alert_seconds
}

// Observe reads every kind's state from the database, records whether each
// backlog condition holds (shared through the database, so all replicas agree
// on when it began) and sets the gauges.
func Observe(ctx context.Context, pool *pgxpool.Pool, cfg config.Outbox, m *Metrics) (map[string]KindState, error) {
	q := db.New()
	rows, err := q.OutboxPendingStats(ctx, pool)
	if err != nil {
		return nil, fmt.Errorf("read outbox backlog: %w", err)
	}
	states := make(map[string]KindState, len(Kinds))
	for _, r := range rows {
		states[r.Kind] = KindState{Pending: r.Pending, OldestDueSeconds: r.OldestDueSeconds}
	}
	var anyAlert, anyDead bool
	for _, kind := range Kinds {
		st := states[kind]
		p := cfg.Policy(kind)
		if st.Dead, err = q.OutboxDeadCount(ctx, pool, kind); err != nil {
			return nil, fmt.Errorf("count dead %s deliveries: %w", kind, err)
		}
		st.Breached = st.Pending > int64(p.BacklogCount) || st.OldestDueSeconds > float64(p.BacklogAgeSeconds)
		if st.Alert, err = q.OutboxBacklogObserve(ctx, pool, db.OutboxBacklogObserveParams{
			Kind: kind, Breached: st.Breached, AlertSeconds: float64(p.BacklogAlertSeconds),
		}); err != nil {
			return nil, fmt.Errorf("record %s backlog: %w", kind, err)
		}
		states[kind] = st
		anyAlert = anyAlert || st.Alert
		anyDead = anyDead || st.Dead > 0
		if m != nil {
			m.Pending.WithLabelValues(kind).Set(float64(st.Pending))
			m.OldestDue.WithLabelValues(kind).Set(st.OldestDueSeconds)
			m.DeadByKind.WithLabelValues(kind).Set(float64(st.Dead))
			m.KindAlert.WithLabelValues(kind).Set(boolGauge(st.Alert))
		}
	}
	if m != nil {
		m.BacklogAlert.Set(boolGauge(anyAlert))
		m.Dead.Set(boolGauge(anyDead))
	}
	return states, nil
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
