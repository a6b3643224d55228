package llm_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/llm"
)

func chat(ep llm.Endpoint) llm.Model { return llm.NewChatCompletions(ep, llm.ChatCompletionsOptions{}) }

func messagesAPI(ep llm.Endpoint) llm.Model { return llm.NewMessages(ep) }

func body(code int, text string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write([]byte(text))
	}
}

// TestContextLengthRefusals: OpenAI's and Anthropic's refusals of a
// request longer than the window are a *llm.ContextLengthError with the
// vendor's numbers, inside the *llm.Error, and are not retried; other 400s
// are not.
func TestContextLengthRefusals(t *testing.T) {
	req := llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}
	cases := []struct {
		name          string
		api           func(llm.Endpoint) llm.Model
		reply         http.HandlerFunc
		limit, tokens int
	}{
		{"openai", chat, body(400, `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9001 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`), 8192, 9001},
		{"openai code only", chat, body(400, `{"error":{"message":"Input too long.","type":"invalid_request_error","code":"context_length_exceeded"}}`), 0, 0},
		{"gemini wording", chat, body(400, `{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}`), 1048576, 1200000},
		{"anthropic", messagesAPI, body(400, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`), 200000, 210000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := newVendor(t, c.reply)
			_, err := c.api(v.endpoint("")).Stream(t.Context(), req, func(llm.Event) error { return nil })
			var le *llm.Error
			require.ErrorAs(t, err, &le)
			require.Equal(t, 400, le.StatusCode)
			var cl *llm.ContextLengthError
			require.True(t, errors.As(err, &cl), "%v", err)
			require.Equal(t, c.limit, cl.Limit)
			require.Equal(t, c.tokens, cl.Tokens)
			require.Len(t, v.requests(), 1, "not retried")
		})
	}
	v := newVendor(t, body(400, `{"error":{"message":"Invalid value for 'temperature'.","type":"invalid_request_error","param":"temperature"}}`))
	_, err := chat(v.endpoint("")).Stream(t.Context(), req, func(llm.Event) error { return nil })
	var cl *llm.ContextLengthError
	require.Error(t, err)
	require.False(t, errors.As(err, &cl))
}
