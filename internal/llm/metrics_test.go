package llm_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/llm"
	"github.com/svcdev/svc/internal/llm/llmtest"
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

	value := func(name string, labels ...string) float64 {
		fams, err := reg.Gather()
		require.NoError(t, err)
		for _, f := range fams {
			if f.GetName() != name {
				continue
			}
			for _, s := range f.GetMetric() {
				if matches(s, labels) {
					if s.Histogram != nil {
						return float64(s.GetHistogram().GetSampleCount())
					}
					return s.GetCounter().GetValue()
				}
			}
		}
		t.Fatalf("no sample %s%v", name, labels)
		return 0
	}
	at := []string{"api", "chat_completions", "provider_type", "openai_compatible"}
	require.Equal(t, 1.0, value("svc_model_calls_total", append(at, "result", "ok")...))
	require.Equal(t, 1.0, value("svc_model_calls_total", append(at, "result", "client_error")...))
	require.Equal(t, 2.0, value("svc_model_call_duration_seconds", at...))
	require.Equal(t, float64(resp.Usage.InputTokens), value("svc_model_tokens_total", append(at, "type", "input")...))
	require.Equal(t, float64(resp.Usage.OutputTokens), value("svc_model_tokens_total", append(at, "type", "output")...))
	require.Positive(t, resp.Usage.OutputTokens)
}

// matches reports whether s has the label pairs of labels (name, value...).
func matches(s *dto.Metric, labels []string) bool {
	have := map[string]string{}
	for _, l := range s.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for i := 0; i+1 < len(labels); i += 2 {
		if have[labels[i]] != labels[i+1] {
			return false
		}
	}
	return len(have) == len(labels)/2
}
