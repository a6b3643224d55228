// Package metrics holds the process's Prometheus registry and the collectors the
// other packages record into. It is served on metrics.listen, never on the API port.
package metrics

import (
	"net/http"
	"runtime"
	"strconv"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is one process's registry and collectors.
type Metrics struct {
	Registry *prometheus.Registry

	// HTTPRequests counts requests by method, route template and status.
	HTTPRequests *prometheus.CounterVec
	// HTTPDuration observes request latency by method and route template;
	// streams of events, which last as long as their clients stay, are
	// counted in HTTPRequests only.
	HTTPDuration *prometheus.HistogramVec
	// UnauthenticatedBodies is the number of request bodies without
	// credentials being read now; UnauthenticatedBodiesRefused counts those
	// refused because limits.unauthenticated_bodies were in flight.
	UnauthenticatedBodies        prometheus.Gauge
	UnauthenticatedBodiesRefused prometheus.Counter
	// SweepPasses counts sweep ticks by sweep and result (ok, error, skipped).
	SweepPasses *prometheus.CounterVec
	// SweepDuration observes the duration of passes this replica ran.
	SweepDuration *prometheus.HistogramVec
}

// New builds a registry with the Go runtime, process and build-info collectors.
func New(version string, schemaVersion int64) *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		Registry: reg,
		HTTPRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_http_requests_total",
			Help: "HTTP requests served, by method, route template and status.",
		}, []string{"method", "route", "status"}),
		HTTPDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "svc_http_request_duration_seconds",
			Help:    "HTTP request latency, by method and route template; streams of Server-Sent Events are left out (see svc_stream_open).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"method", "route"}),
		UnauthenticatedBodies: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "svc_http_unauthenticated_bodies",
			Help: "Request bodies without credentials being read now (at most limits.unauthenticated_bodies).",
		}),
		UnauthenticatedBodiesRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "svc_http_unauthenticated_bodies_refused_total",
			Help: "Requests without credentials refused with 503 because limits.unauthenticated_bodies bodies were being read.",
		}),
		SweepPasses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_sweep_passes_total",
			Help: "Maintenance sweep ticks, by sweep and result (ok, error, or skipped when another replica holds the claim).",
		}, []string{"sweep", "result"}),
		SweepDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "svc_sweep_duration_seconds",
			Help:    "Duration of the sweep passes this replica ran.",
			Buckets: prometheus.DefBuckets,
		}, []string{"sweep"}),
	}
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "svc_build_info",
		Help: "Always 1; labels describe the running build.",
		ConstLabels: prometheus.Labels{
			"version":        version,
			"schema_version": strconv.FormatInt(schemaVersion, 10),
			"go_version":     runtime.Version(),
		},
	})
	buildInfo.Set(1)
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildInfo, m.HTTPRequests, m.HTTPDuration, m.SweepPasses, m.SweepDuration,
		m.UnauthenticatedBodies, m.UnauthenticatedBodiesRefused,
	)
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// RegisterPool exports the database pool's statistics.
func (m *Metrics) RegisterPool(pool *pgxpool.Pool) {
	m.Registry.MustRegister(poolCollector{pool: pool})
}

var (
	poolMaxDesc      = prometheus.NewDesc("svc_db_pool_max_conns", "Maximum size of the database pool.", nil, nil)
	poolTotalDesc    = prometheus.NewDesc("svc_db_pool_total_conns", "Connections currently open in the database pool.", nil, nil)
	poolAcquiredDesc = prometheus.NewDesc("svc_db_pool_acquired_conns", "Connections currently in use.", nil, nil)
	poolIdleDesc     = prometheus.NewDesc("svc_db_pool_idle_conns", "Idle connections.", nil, nil)
	poolAcquiresDesc = prometheus.NewDesc("svc_db_pool_acquires_total", "Successful connection acquisitions.", nil, nil)
	poolEmptyDesc    = prometheus.NewDesc("svc_db_pool_empty_acquires_total", "Acquisitions that had to wait for a connection.", nil, nil)
	poolCancelDesc   = prometheus.NewDesc("svc_db_pool_canceled_acquires_total", "Acquisitions cancelled before a connection was available.", nil, nil)
	poolWaitDesc     = prometheus.NewDesc("svc_db_pool_acquire_wait_seconds_total", "Time spent waiting for connections.", nil, nil)
)

// poolCollector reads the pool's statistics at scrape time.
type poolCollector struct{ pool *pgxpool.Pool }

func (c poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{poolMaxDesc, poolTotalDesc, poolAcquiredDesc, poolIdleDesc, poolAcquiresDesc, poolEmptyDesc, poolCancelDesc, poolWaitDesc} {
		ch <- d
	}
}

func (c poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.pool.Stat()
	ch <- prometheus.MustNewConstMetric(poolMaxDesc, prometheus.GaugeValue, float64(s.MaxConns()))
	ch <- prometheus.MustNewConstMetric(poolTotalDesc, prometheus.GaugeValue, float64(s.TotalConns()))
	ch <- prometheus.MustNewConstMetric(poolAcquiredDesc, prometheus.GaugeValue, float64(s.AcquiredConns()))
	ch <- prometheus.MustNewConstMetric(poolIdleDesc, prometheus.GaugeValue, float64(s.IdleConns()))
	ch <- prometheus.MustNewConstMetric(poolAcquiresDesc, prometheus.CounterValue, float64(s.AcquireCount()))
	ch <- prometheus.MustNewConstMetric(poolEmptyDesc, prometheus.CounterValue, float64(s.EmptyAcquireCount()))
	ch <- prometheus.MustNewConstMetric(poolCancelDesc, prometheus.CounterValue, float64(s.CanceledAcquireCount()))
	ch <- prometheus.MustNewConstMetric(poolWaitDesc, prometheus.CounterValue, s.AcquireDuration().Seconds())
}
