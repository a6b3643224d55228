package outbox

import (
	"context"
	"fmt"

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
}

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
	reg.MustRegister(m.BacklogAlert, m.Dead, m.KindAlert, m.Pending, m.OldestDue, m.DeadByKind, m.Attempts, m.SlowAttempts)
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
