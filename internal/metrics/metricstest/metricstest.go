// Package metricstest reads what a Prometheus registry would export, for
// tests that assert on the metrics a package records.
package metricstest

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
)

// Samples answers the value of every sample g gathers, by family name and
// label pairs in name order ("name{a=x,b=y}", or "name" for a sample
// without labels): a counter's or gauge's value, a histogram's count.
func Samples(t testing.TB, g prometheus.Gatherer) map[string]float64 {
	t.Helper()
	fams, err := g.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			key := f.GetName()
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			out[key] = value(m)
		}
	}
	return out
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Histogram != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return 0
}
