package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/tool"
)

// Instrumented tools count each call by toolset and result and time it;
// their answers pass through unchanged.
func TestInstrumentedTools(t *testing.T) {
	t.Parallel()
	answer := func(res tool.Result, err error) func(context.Context, json.RawMessage) (tool.Result, error) {
		return func(context.Context, json.RawMessage) (tool.Result, error) { return res, err }
	}
	failure := errors.New("the backend is out of reach")
	reg := prometheus.NewRegistry()
	tools := tool.NewMetrics(reg).Instrument([]tool.Tool{
		{Toolset: "web", Call: answer(tool.Result{Text: "page"}, nil)},
		{Toolset: "web", Call: answer(tool.Errorf("no such page"), nil)},
		{Toolset: "memory", Call: answer(tool.Result{}, failure)},
		{Toolset: "subagent", Call: answer(tool.Result{Pending: true}, nil)},
		{Toolset: "environment", Call: func(context.Context, json.RawMessage) (tool.Result, error) { panic("broken") }},
	})
	res, err := tools[0].Call(t.Context(), nil)
	require.NoError(t, err)
	require.Equal(t, "page", res.Text)
	res, err = tools[1].Call(t.Context(), nil)
	require.NoError(t, err)
	require.True(t, res.IsError)
	_, err = tools[2].Call(t.Context(), nil)
	require.ErrorIs(t, err, failure)
	res, err = tools[3].Call(t.Context(), nil)
	require.NoError(t, err)
	require.True(t, res.Pending)
	require.Panics(t, func() { _, _ = tools[4].Call(t.Context(), nil) })

	fams, err := reg.Gather()
	require.NoError(t, err)
	calls, timed := map[string]float64{}, map[string]uint64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			key := ""
			for _, l := range m.GetLabel() {
				key += l.GetName() + "=" + l.GetValue() + " "
			}
			switch f.GetName() {
			case "svc_tool_calls_total":
				if v := m.GetCounter().GetValue(); v > 0 { // each toolset's results are exported at 0 too
					calls[key] = v
				}
			case "svc_tool_call_duration_seconds":
				timed[key] = m.GetHistogram().GetSampleCount()
			}
		}
	}
	require.Equal(t, map[string]float64{
		"result=ok toolset=web ":             1,
		"result=tool_error toolset=web ":     1,
		"result=failed toolset=memory ":      1,
		"result=pending toolset=subagent ":   1,
		"result=failed toolset=environment ": 1,
	}, calls)
	require.Equal(t, map[string]uint64{"toolset=web ": 2, "toolset=memory ": 1, "toolset=subagent ": 1, "toolset=environment ": 1}, timed)
}
