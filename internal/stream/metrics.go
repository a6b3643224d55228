package stream

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the streams' Prometheus collectors.
type Metrics struct {
	// Open is the number of Server-Sent Event streams this process serves
	// now (the API's and the console's).
	Open prometheus.Gauge
}

// NewMetrics registers the streams' collectors with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{Open: prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "svc_stream_open",
		Help: "Server-Sent Event streams of threads this process serves now.",
	})}
	reg.MustRegister(m.Open)
	return m
}

// opened counts a stream that opened; the function it answers counts its
// end.
func (m *Metrics) opened() func() {
	if m == nil {
		return func() {}
	}
	m.Open.Inc()
	return m.Open.Dec
}
