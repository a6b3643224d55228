package llm_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/llm"
	"github.com/svcdev/svc/internal/llm/llmtest"
	"github.com/svcdev/svc/internal/metrics/metricstest"
)

func TestCallResult(t *testing.T) {
	t.Parallel()
	live := context.Background()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		ctx  context.Context
		err  error
		want string
	}{
		{live, nil, llm.ResultOK},
		{live, &llm.Error{StatusCode: http.StatusTooManyRequests}, llm.ResultRateLimited},
		{live, fmt.Errorf("step: %w", &llm.Error{StatusCode: http.StatusUnauthorized}), llm.ResultClientError},
		{live, &llm.Error{StatusCode: http.StatusBadGateway}, llm.ResultServerError},
		{live, &llm.Error{}, llm.ResultTransportError},
		{live, &llm.OutputLimitError{Bound: llm.BoundTokens}, llm.ResultOutputLimit},
		{live, errors.New("the callback refused an event"), llm.ResultError},
		{ended, &llm.Error{}, llm.ResultCancelled},
	} {
		require.Equal(t, c.want, llm.CallResult(c.ctx, c.err), "%v", c.err)
	}
}

// An instrumented model counts and times each call under its API and
// provider type, and adds the tokens the vendor reported.
func TestInstrumentedModel(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewChatServer([]llmtest.Turn{{Text: "Hello."}, {Status: http.StatusBadRequest}})
	defer srv.Close()
	reg := prometheus.NewRegistry()
	m := llm.NewMetrics(reg).Instrument(llm.NewChatCompletions(llm.Endpoint{BaseURL: srv.URL + "/v1"}, llm.ChatCompletionsOptions{}),
		"chat_completions", "openai_compatible")

	resp, err := m.Stream(t.Context(), hello, func(llm.Event) error { return nil })
	require.NoError(t, err)
	// The scripted server answers the conversation's second turn with a 400.
	again := hello
	again.Messages = append(append([]llm.Message{}, hello.Messages...), llm.Message{Role: llm.RoleAssistant, Text: "Hello."},
		llm.Message{Role: llm.RoleUser, Text: "Again."})
	_, err = m.Stream(t.Context(), again, func(llm.Event) error { return nil })
	require.Error(t, err)

	got := metricstest.Samples(t, reg)
	at := "api=chat_completions,provider_type=openai_compatible"
	for name, want := range map[string]float64{
		"svc_model_calls_total{" + at + ",result=ok}":           1,
		"svc_model_calls_total{" + at + ",result=client_error}": 1,
		"svc_model_call_duration_seconds{" + at + "}":           2,
		"svc_model_tokens_total{" + at + ",type=input}":         float64(resp.Usage.InputTokens),
		"svc_model_tokens_total{" + at + ",type=output}":        float64(resp.Usage.OutputTokens),
	} {
		require.Contains(t, got, name)
		require.Equal(t, want, got[name], name)
	}
	require.Positive(t, resp.Usage.OutputTokens)
}
