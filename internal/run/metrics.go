package run

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcdev/svc/gen/db"
)

// RunDurationBuckets are the bounds, in seconds, of svc_runs_duration_seconds:
// from a one-step answer to runs that wait hours for a person
// (docs/decisions/0058-metrics-and-run-logs.md).
var RunDurationBuckets = []float64{.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 24 * 3600}

// Metrics are the runs' Prometheus collectors. Counts are recorded once the
// transaction that made them committed, by the process that committed it:
// a worker finishes its runs, a control process cancels queued runs and
// ends expired leases, so dashboards sum them across replicas.
type Metrics struct {
	// Finished counts runs by the status they ended with; Duration
	// observes the time from their acceptance to their end.
	Finished *prometheus.CounterVec
	Duration *prometheus.HistogramVec
	// LeaseExpiries counts the attempts the expire_leases sweep ended
	// (charged) because their worker stopped renewing their lease.
	LeaseExpiries prometheus.Counter
}

// NewMetrics registers the runs' collectors with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_runs_finished_total",
			Help: "Runs that ended, by final status (succeeded, failed, cancelled), counted by the replica that ended them.",
		}, []string{"status"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "svc_runs_duration_seconds",
			Help:    "Time from a run's acceptance to its end (queueing, waits for people and subagents included), by final status.",
			Buckets: RunDurationBuckets,
		}, []string{"status"}),
		LeaseExpiries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "svc_runs_lease_expiries_total",
			Help: "Run attempts the expire_leases sweep ended, charged, because their lease ran out (a worker that died, froze or lost the database).",
		}),
	}
	reg.MustRegister(m.Finished, m.Duration, m.LeaseExpiries)
	for _, s := range []Status{StatusSucceeded, StatusFailed, StatusCancelled} {
		m.Finished.WithLabelValues(string(s))
	}
	return m
}

// finished counts run r, which ended with status; nil counts nothing.
func (m *Metrics) finished(status Status, r db.Run) {
	if m == nil {
		return
	}
	m.Finished.WithLabelValues(string(status)).Inc()
	if r.FinishedAt != nil {
		m.Duration.WithLabelValues(string(status)).Observe(r.FinishedAt.Sub(r.CreatedAt).Seconds())
	}
}

// leasesExpired counts n attempts ended by the lease sweep.
func (m *Metrics) leasesExpired(n int) {
	if m != nil && n > 0 {
		m.LeaseExpiries.Add(float64(n))
	}
}

// afterCommit has fn run once the transaction that p collects for committed
// (pending.publish), never when it rolled back.
func (p *pending) afterCommit(fn func()) { p.committed = append(p.committed, fn) }

// QueueStats is the state of the run queue, read from the database: every
// replica answers the same.
type QueueStats struct {
	// Queued is the number of runs a worker may claim now; OldestSeconds
	// how long the one ready longest has waited (0 when none).
	Queued        int64
	OldestSeconds float64
	// Running is the number of runs an attempt holds.
	Running int64
}

// QueueStats reads the run queue (RunQueueStats: two index scans).
func (s *Service) QueueStats(ctx context.Context) (QueueStats, error) {
	row, err := s.q.RunQueueStats(ctx, s.pool)
	if err != nil {
		return QueueStats{}, err
	}
	return QueueStats{Queued: row.Queued, OldestSeconds: row.OldestSeconds, Running: row.Running}, nil
}

var (
	queuedDesc = prometheus.NewDesc("svc_runs_queued",
		"Runs a worker may claim now (accepted, or handed back and due), read from the database at scrape time.", nil, nil)
	oldestDesc = prometheus.NewDesc("svc_runs_queued_oldest_seconds",
		"How long the run that has been claimable longest has waited for a worker; 0 when none waits. Read at scrape time.", nil, nil)
	runningDesc = prometheus.NewDesc("svc_runs_running",
		"Runs an attempt holds (leased to a worker), read from the database at scrape time.", nil, nil)
)

// QueueCollector is a collector that reads QueueStats at every scrape,
// within timeout (metrics.query_timeout). A read that fails or runs out of
// time is logged and its gauges are left out of that scrape, so the rest of
// the scrape still answers.
func (s *Service) QueueCollector(timeout time.Duration, log *slog.Logger) prometheus.Collector {
	return queueCollector{s: s, timeout: timeout, log: log}
}

type queueCollector struct {
	s       *Service
	timeout time.Duration
	log     *slog.Logger
}

func (c queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- queuedDesc
	ch <- oldestDesc
	ch <- runningDesc
}

func (c queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	st, err := c.s.QueueStats(ctx)
	if err != nil {
		c.log.Warn("reading the run queue for metrics failed; its gauges are left out of this scrape", "error", err.Error())
		return
	}
	ch <- prometheus.MustNewConstMetric(queuedDesc, prometheus.GaugeValue, float64(st.Queued))
	ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, st.OldestSeconds)
	ch <- prometheus.MustNewConstMetric(runningDesc, prometheus.GaugeValue, float64(st.Running))
}
