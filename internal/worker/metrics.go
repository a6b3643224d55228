package worker

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// How an attempt ended, as svc_worker_attempts_ended_total's end label says.
const (
	// endFinished: the run ended with the attempt (run.Service.Finish), charged.
	endFinished = "finished"
	// endRetried: a failure of svc's own ended the attempt, charged; the
	// run continues in a new attempt or fails with attempts_exhausted
	// (run.Service.Retry).
	endRetried = "retried"
	// endHandedOff: the run was given back uncharged, to continue from its
	// last checkpoint (a draining worker, a vendor's long Retry-After).
	endHandedOff = "handed_off"
	// endSuspended: the run waits for subagents or a person, uncharged.
	endSuspended = "suspended"
	// endLeaseLost: the attempt learned that its lease was gone and stopped
	// without writing; the expire_leases sweep charges it
	// (svc_runs_lease_expiries_total).
	endLeaseLost = "lease_lost"
	// endUnrecorded: the write that ends the attempt failed; the lease
	// sweep ends it when its lease runs out.
	endUnrecorded = "unrecorded"
)

// charged tells which ends count against a run's max_attempts.
var charged = map[string]bool{endFinished: true, endRetried: true}

// Metrics are a worker's Prometheus collectors.
type Metrics struct {
	// Slots is worker.slots; Busy the slots an attempt holds now.
	Slots prometheus.Gauge
	Busy  prometheus.Gauge
	// Started counts the attempts this worker claimed; Ended counts how
	// they ended, by end and whether that end is charged.
	Started prometheus.Counter
	Ended   *prometheus.CounterVec
}

// NewMetrics registers a worker's collectors with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Slots: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "svc_worker_slots",
			Help: "Attempts this worker runs at once at most (worker.slots).",
		}),
		Busy: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "svc_worker_slots_busy",
			Help: "Slots of this worker an attempt holds now.",
		}),
		Started: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "svc_worker_attempts_started_total",
			Help: "Run attempts this worker claimed and started.",
		}),
		Ended: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_worker_attempts_ended_total",
			Help: "Run attempts of this worker that ended, by end (finished, retried, handed_off, suspended, lease_lost, unrecorded) and charged (whether the end counts against the run's max_attempts).",
		}, []string{"end", "charged"}),
	}
	reg.MustRegister(m.Slots, m.Busy, m.Started, m.Ended)
	for _, end := range []string{endFinished, endRetried, endHandedOff, endSuspended, endLeaseLost, endUnrecorded} {
		m.Ended.WithLabelValues(end, strconv.FormatBool(charged[end]))
	}
	return m
}

// slots records the worker's number of slots.
func (m *Metrics) slots(n int) {
	if m != nil {
		m.Slots.Set(float64(n))
	}
}

// started counts an attempt that took a slot; its goroutine calls done when
// it gives the slot back.
func (m *Metrics) started() {
	if m != nil {
		m.Started.Inc()
		m.Busy.Inc()
	}
}

func (m *Metrics) done() {
	if m != nil {
		m.Busy.Dec()
	}
}

// ended counts an attempt's end; a failed write of it (werr) is unrecorded.
func (m *Metrics) ended(end string, werr error) {
	if m == nil || end == "" {
		return
	}
	if werr != nil {
		end = endUnrecorded
	}
	m.Ended.WithLabelValues(end, strconv.FormatBool(charged[end])).Inc()
}
