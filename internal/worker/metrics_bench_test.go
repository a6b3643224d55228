package worker_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcdev/svc/internal/llm"
	"github.com/svcdev/svc/internal/tool"
)

// nopModel answers at once with a fixed usage.
type nopModel struct{}

func (nopModel) Stream(context.Context, llm.Request, func(llm.Event) error) (llm.Response, error) {
	return llm.Response{Usage: llm.Usage{InputTokens: 1200, OutputTokens: 80}}, nil
}

// BenchmarkStepInstrumentation is what the metrics and the run's log
// attributes add to one tool step, measured alone: a model call through
// the instrumented model, a tool call through the instrumented tool, and
// the step's debug record on the attempt's logger (at level info, as
// processes log by default), against the same calls without them.
func BenchmarkStepInstrumentation(b *testing.B) {
	req := llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}
	nopTool := []tool.Tool{{Toolset: "web", Call: func(context.Context, json.RawMessage) (tool.Result, error) { return tool.Result{Text: "ok"}, nil }}}
	args := json.RawMessage(`{}`)
	for _, on := range []bool{false, true} {
		name := "metrics=off"
		var model llm.Model = nopModel{}
		tools := append([]tool.Tool(nil), nopTool...)
		log := slog.New(slog.NewJSONHandler(io.Discard, nil))
		if on {
			name = "metrics=on"
			reg := prometheus.NewRegistry()
			model = llm.NewMetrics(reg).Instrument(model, "chat_completions", "openai")
			tools = tool.NewMetrics(reg).Instrument(tools)
			log = log.With("run_id", "run_01", "attempt_id", "att_01", "attempt", 1, "workspace_id", "ws_01", "thread_id", "th_01")
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := model.Stream(ctx, req, nil); err != nil {
					b.Fatal(err)
				}
				if _, err := tools[0].Call(ctx, args); err != nil {
					b.Fatal(err)
				}
				if on {
					log.Debug("step recorded", "step", 3, "tool_calls", 1, "results", 1)
				}
			}
		})
	}
}
