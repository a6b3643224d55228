package agentloop_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/svcdev/svc/internal/agentloop"
	"github.com/svcdev/svc/internal/llm"
	"github.com/svcdev/svc/internal/tool"
)

func attrInt(key string, v int) attribute.KeyValue { return attribute.Int(key, v) }

// TestStepSpans: with a tracer, each step is a span under the run's
// context, and what the step does (its tool calls, its record) runs under
// it; a step that fails the run ends with an error status naming the
// failure's code, and one that waits for answers does not.
func TestStepSpans(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		script   []turn
		policy   map[string]string
		steps    int
		lastCode codes.Code
		lastType string
	}{
		{name: "two steps", script: []turn{calling("Looking.", 1, `a:lookup:{"word":"fig"}`), answer("Three.", 1)}, steps: 2},
		{name: "a failed step", script: []turn{{Err: &llm.Error{API: "chat_completions", StatusCode: 400, Message: "the prompt secret-prompt is bad"}}},
			steps: 1, lastCode: codes.Error, lastType: agentloop.CodeModel},
		{name: "a waiting step", script: []turn{calling("", 1, `a:lookup:{"word":"fig"}`)}, policy: map[string]string{"lookup": agentloop.PolicyAsk}, steps: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spans := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
			t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			h := newHost()
			var inTool trace.SpanContext
			tools := toolsOf(h, []string{"lookup"})
			call := tools[0].Call
			tools[0].Call = func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
				inTool = trace.SpanContextFromContext(ctx)
				return call(ctx, args)
			}
			ctx, root := tp.Tracer("test").Start(t.Context(), "attempt")
			_, _ = agentloop.Run(ctx, agentloop.Spec{Model: &scriptedModel{turns: tc.script}, ModelName: "m", Tools: tools,
				Limits: withClock(agentloop.Limits{MaxSteps: 5}), Policy: tc.policy, Tracer: tp.Tracer("test")},
				agentloop.State{Messages: []llm.Message{user}}, h)
			root.End()

			var steps tracetest.SpanStubs
			for _, s := range spans.GetSpans() {
				if s.Name == "run.step" {
					steps = append(steps, s)
				}
			}
			require.Len(t, steps, tc.steps)
			for i, s := range steps {
				require.Equal(t, root.SpanContext().SpanID(), s.Parent.SpanID())
				require.Contains(t, s.Attributes, attrInt("svc.run.step", i+1))
			}
			last := steps[len(steps)-1]
			require.Equal(t, tc.lastCode, last.Status.Code)
			if tc.lastType != "" {
				require.Equal(t, tc.lastType, last.Status.Description)
				require.NotContains(t, last.Status.Description, "secret-prompt")
			}
			if tc.steps == 2 {
				require.Equal(t, steps[0].SpanContext.SpanID(), inTool.SpanID(), "the tool runs under its step")
			}
		})
	}
}
