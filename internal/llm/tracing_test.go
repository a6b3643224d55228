package llm_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/svcdev/svc/internal/llm"
)

// modelFunc is a Model of one function.
type modelFunc func(ctx context.Context, req llm.Request, fn func(llm.Event) error) (llm.Response, error)

func (f modelFunc) Stream(ctx context.Context, req llm.Request, fn func(llm.Event) error) (llm.Response, error) {
	return f(ctx, req, fn)
}

// TestTraced: a traced call is a client span with the GenAI attributes of
// the request and the answer, and a failed one says why by class and
// status only; a nil tracer leaves the model as it is.
func TestTraced(t *testing.T) {
	t.Parallel()
	answer := llm.Response{Message: llm.Message{Text: "secret-answer"}, Usage: llm.Usage{InputTokens: 12, OutputTokens: 5},
		FinishReason: llm.FinishStop, Attempts: 2}
	for _, tc := range []struct {
		name     string
		provider string
		err      error
		attrs    map[string]any
		status   codes.Code
	}{
		{name: "answer", provider: "anthropic", attrs: map[string]any{
			"gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic", "gen_ai.system": "anthropic",
			"gen_ai.request.model": "m-1", "gen_ai.request.max_tokens": int64(100), "gen_ai.usage.input_tokens": int64(12),
			"gen_ai.usage.output_tokens": int64(5), "gen_ai.response.finish_reasons": []string{"stop"}, "svc.llm.requests": int64(2)}},
		{name: "provider names", provider: "aws_bedrock", attrs: map[string]any{"gen_ai.provider.name": "aws.bedrock"}},
		{name: "other provider", provider: "openrouter", attrs: map[string]any{"gen_ai.provider.name": "openrouter"}},
		{name: "vendor error", provider: "openai", err: &llm.Error{API: "chat_completions", StatusCode: 429, Type: "rate_limit_error", Message: "slow down about secret-prompt"},
			attrs: map[string]any{"error.type": "rate_limit_error", "http.response.status_code": int64(429)}, status: codes.Error},
		{name: "status only", provider: "openai", err: &llm.Error{API: "chat_completions", StatusCode: 503, Message: "down"},
			attrs: map[string]any{"error.type": "503"}, status: codes.Error},
		{name: "other error", provider: "openai", err: fmt.Errorf("decode chunk secret-prompt"),
			attrs: map[string]any{"error.type": "_OTHER"}, status: codes.Error},
		{name: "cancelled", provider: "openai", err: context.Canceled, attrs: map[string]any{"error.type": "canceled"}, status: codes.Error},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spans := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
			t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			m := llm.Traced(modelFunc(func(context.Context, llm.Request, func(llm.Event) error) (llm.Response, error) {
				return answer, tc.err
			}), tp.Tracer("test"), tc.provider)
			_, err := m.Stream(t.Context(), llm.Request{Model: "m-1", System: "secret-system", MaxOutputTokens: 100,
				Messages: []llm.Message{{Role: llm.RoleUser, Text: "secret-prompt"}}}, func(llm.Event) error { return nil })
			require.Equal(t, tc.err, err)
			got := spans.GetSpans()
			require.Len(t, got, 1)
			s := got[0]
			require.Equal(t, "chat m-1", s.Name)
			attrs := map[string]any{}
			for _, kv := range s.Attributes {
				attrs[string(kv.Key)] = kv.Value.AsInterface()
				require.NotContains(t, kv.Value.Emit(), "secret")
			}
			for k, v := range tc.attrs {
				require.Equal(t, v, attrs[k], k)
			}
			require.Equal(t, tc.status, s.Status.Code)
			require.NotContains(t, s.Status.Description, "secret")
			require.Empty(t, s.Events, "no error event with the error's text")
		})
	}

	plain := modelFunc(func(context.Context, llm.Request, func(llm.Event) error) (llm.Response, error) { return answer, nil })
	require.NotNil(t, llm.Traced(plain, nil, "openai"))
	_, same := llm.Traced(plain, nil, "openai").(modelFunc)
	require.True(t, same, "a nil tracer answers the model itself")
}
