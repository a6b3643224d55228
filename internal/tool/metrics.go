package tool

import (
	"context"
	"encoding/json"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// CallDurationBuckets are the bounds, in seconds, of
// svc_tool_call_duration_seconds: from a memory lookup to a long command in
// an environment (docs/decisions/0058-metrics-and-run-logs.md).
var CallDurationBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}

// Results of a tool call, as svc_tool_calls_total's result label says.
const (
	// ResultOK: the tool answered.
	ResultOK = "ok"
	// ResultToolError: the tool answered with an error the model reads
	// (bad arguments, a vendor's refusal); the run goes on.
	ResultToolError = "tool_error"
	// ResultFailed: the call failed for svc or its context (a backend out
	// of reach, the attempt stopping); the step stops.
	ResultFailed = "failed"
	// ResultPending: the answer comes later (a subagent's).
	ResultPending = "pending"
)

// Metrics are the tool calls' Prometheus collectors, labelled by toolset
// (agent.Toolsets: web, environment, memory, connection, subagent), never by
// tool name, which tenants' connections choose.
type Metrics struct {
	Duration *prometheus.HistogramVec
	Calls    *prometheus.CounterVec
}

// NewMetrics registers the tool call collectors with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "svc_tool_call_duration_seconds",
			Help:    "Duration of tool calls, by toolset.",
			Buckets: CallDurationBuckets,
		}, []string{"toolset"}),
		Calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_tool_calls_total",
			Help: "Tool calls, by toolset and result (ok, tool_error, failed, pending).",
		}, []string{"toolset", "result"}),
	}
	reg.MustRegister(m.Duration, m.Calls)
	return m
}

// Instrument returns tools with each call timed and counted under its
// toolset; with nil metrics, tools themselves. The series are looked up
// once, here, not at each call.
func (m *Metrics) Instrument(tools []Tool) []Tool {
	if m == nil {
		return tools
	}
	for i, t := range tools {
		call := t.Call
		duration := m.Duration.WithLabelValues(t.Toolset)
		ok, toolError := m.Calls.WithLabelValues(t.Toolset, ResultOK), m.Calls.WithLabelValues(t.Toolset, ResultToolError)
		failed, pending := m.Calls.WithLabelValues(t.Toolset, ResultFailed), m.Calls.WithLabelValues(t.Toolset, ResultPending)
		tools[i].Call = func(ctx context.Context, args json.RawMessage) (res Result, err error) {
			start, counted := time.Now(), failed // a panic, which the loop recovers, fails the call
			defer func() {
				duration.Observe(time.Since(start).Seconds())
				counted.Inc()
			}()
			res, err = call(ctx, args)
			switch {
			case err != nil:
			case res.Pending:
				counted = pending
			case res.IsError:
				counted = toolError
			default:
				counted = ok
			}
			return res, err
		}
	}
	return tools
}
