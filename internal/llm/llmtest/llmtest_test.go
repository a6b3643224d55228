package llmtest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/llm"
	"github.com/svcdev/svc/internal/llm/llmtest"
)

// protocol is a scripted server and svc's adapter of its protocol.
type protocol struct {
	name  string
	serve func(script []llmtest.Turn, opts ...llmtest.Option) *llmtest.Server
	model func(baseURL string) llm.Model
}

var protocols = []protocol{
	{"chat", llmtest.NewChatServer, func(u string) llm.Model {
		return llm.NewChatCompletions(llm.Endpoint{BaseURL: u + "/v1", APIKey: "sk-test", Retry: llm.RetryPolicy{MaxAttempts: 1}}, llm.ChatCompletionsOptions{})
	}},
	{"messages", llmtest.NewMessagesServer, func(u string) llm.Model {
		return llm.NewMessages(llm.Endpoint{BaseURL: u, APIKey: "sk-ant-test", Retry: llm.RetryPolicy{MaxAttempts: 1}})
	}},
}

var lookup = []llm.Tool{{Name: "lookup", Description: "Looks a word up.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"word":{"type":"string"}}}`)}}

// TestConversation: the adapters read the scripted text and tool calls,
// and the server's log reads the same conversation for both protocols.
func TestConversation(t *testing.T) {
	t.Parallel()
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			srv := p.serve([]llmtest.Turn{
				{Text: "Let me look.", Chunks: 3, ToolCalls: []llmtest.Call{{Name: "lookup", Arguments: `{"word":"banana"}`}, {Name: "lookup", Arguments: `{"word":"fig"}`}}},
				{Text: "Six and three.", Chunks: 2},
			})
			t.Cleanup(srv.Close)
			model := p.model(srv.URL)
			req := llm.Request{Model: "scripted", System: "Be brief.", Tools: lookup,
				Messages: []llm.Message{{Role: llm.RoleUser, Text: "How long are banana and fig?"}}}
			var streamed strings.Builder
			r1, err := model.Stream(t.Context(), req, func(e llm.Event) error {
				if e.Kind == llm.EventTextDelta {
					streamed.WriteString(e.Text)
				}
				return nil
			})
			require.NoError(t, err)
			require.Equal(t, "Let me look.", r1.Message.Text)
			require.Equal(t, "Let me look.", streamed.String())
			require.Equal(t, llm.FinishToolCalls, r1.FinishReason)
			require.Len(t, r1.Message.ToolCalls, 2)
			require.Equal(t, "lookup", r1.Message.ToolCalls[1].Name)
			require.JSONEq(t, `{"word":"fig"}`, r1.Message.ToolCalls[1].Arguments)
			require.Equal(t, llm.Usage{InputTokens: 10, OutputTokens: 5}, r1.Usage)

			req.Messages = append(req.Messages, r1.Message,
				llm.Message{Role: llm.RoleTool, ToolCallID: r1.Message.ToolCalls[0].ID, Text: "6 letters"},
				llm.Message{Role: llm.RoleTool, ToolCallID: r1.Message.ToolCalls[1].ID, Text: "no such word", IsError: true})
			r2, err := model.Stream(t.Context(), req, func(llm.Event) error { return nil })
			require.NoError(t, err)
			require.Equal(t, "Six and three.", r2.Message.Text)
			require.Equal(t, llm.FinishStop, r2.FinishReason)

			reqs := srv.Requests()
			require.Len(t, reqs, 2)
			require.Equal(t, "Be brief.", reqs[1].System())
			require.Equal(t, []string{"lookup"}, reqs[1].ToolNames())
			conv := reqs[1].Conversation()
			require.Len(t, conv, 4)
			require.Equal(t, llmtest.Message{Role: "user", Text: "How long are banana and fig?"}, conv[0])
			require.Equal(t, "assistant", conv[1].Role)
			require.Equal(t, "Let me look.", conv[1].Text)
			require.Len(t, conv[1].ToolCalls, 2)
			require.JSONEq(t, `{"word":"banana"}`, conv[1].ToolCalls[0].Arguments)
			require.Equal(t, "tool", conv[2].Role)
			require.Equal(t, "6 letters", conv[2].Text)
			require.Equal(t, r1.Message.ToolCalls[0].ID, conv[2].ToolCallID)
			require.Equal(t, "no such word", conv[3].Text)
		})
	}
}

// TestWindow: a request longer than the window is refused with the
// vendor's context-length error, which the adapter reads with its numbers.
func TestWindow(t *testing.T) {
	t.Parallel()
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			srv := p.serve([]llmtest.Turn{{Text: "Noted."}}, llmtest.Window(200))
			t.Cleanup(srv.Close)
			model := p.model(srv.URL)
			long := llm.Request{Model: "scripted", Messages: []llm.Message{{Role: llm.RoleUser, Text: strings.Repeat("word ", 400)}}}
			_, err := model.Stream(t.Context(), long, func(llm.Event) error { return nil })
			var cl *llm.ContextLengthError
			require.ErrorAs(t, err, &cl, "%v", err)
			reqs := srv.Requests()
			require.True(t, reqs[0].Refused)
			require.Equal(t, llm.ContextLengthError{Limit: 200, Tokens: reqs[0].Tokens}, *cl)

			short := llm.Request{Model: "scripted", Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}
			r, err := model.Stream(t.Context(), short, func(llm.Event) error { return nil })
			require.NoError(t, err)
			require.Equal(t, srv.Requests()[1].Tokens, r.Usage.InputTokens, "the usage reports the request's length")
		})
	}
}

// TestScriptedStatus: a turn's status is answered with the vendor's error
// body, which the adapter reads.
func TestScriptedStatus(t *testing.T) {
	t.Parallel()
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			srv := p.serve([]llmtest.Turn{{Status: http.StatusTooManyRequests}})
			t.Cleanup(srv.Close)
			_, err := p.model(srv.URL).Stream(t.Context(), llm.Request{Model: "scripted", Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}},
				func(llm.Event) error { return nil })
			var e *llm.Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, http.StatusTooManyRequests, e.StatusCode)
			require.True(t, e.Retryable)
			require.Contains(t, e.Message, "scripted failure")
			if p.name == "messages" {
				require.Equal(t, "rate_limit_error", e.Type)
			}
		})
	}
}

// TestFlood: the flood streams past the adapter's bounds, as text and as
// a tool call's arguments, and stops when the client leaves.
func TestFlood(t *testing.T) {
	t.Parallel()
	for _, p := range protocols {
		for _, args := range []bool{false, true} {
			t.Run(p.name, func(t *testing.T) {
				t.Parallel()
				srv := p.serve([]llmtest.Turn{{Text: "Here:", Flood: 64 << 20, FloodArguments: args}})
				t.Cleanup(srv.Close)
				req := llm.Request{Model: "scripted", Tools: lookup, MaxOutputTokens: 100,
					Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}
				_, err := p.model(srv.URL).Stream(t.Context(), req, func(llm.Event) error { return nil })
				require.Error(t, err)
				require.Less(t, srv.FloodSent(), int64(64<<20), "the flood stopped when the client left")
			})
		}
	}
}

// TestMessagesRefusesWhatAnthropicRefuses: the messages server refuses
// a request the API would, with Anthropic's error.
func TestMessagesRefusesWhatAnthropicRefuses(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewMessagesServer([]llmtest.Turn{{Text: "Noted."}})
	t.Cleanup(srv.Close)
	post := func(headers map[string]string, body string) (int, map[string]any) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/v1/messages", strings.NewReader(body))
		require.NoError(t, err)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var out map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		return resp.StatusCode, out
	}
	ok := map[string]string{"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"}
	for _, tc := range []struct {
		name    string
		headers map[string]string
		body    string
		status  int
		typ     string
		message string
	}{
		{"no key", map[string]string{"anthropic-version": "2023-06-01"}, `{"max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			401, "authentication_error", "x-api-key"},
		{"no version", map[string]string{"x-api-key": "k"}, `{"max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			400, "invalid_request_error", "anthropic-version"},
		{"no max_tokens", ok, `{"stream":true,"messages":[{"role":"user","content":"hi"}]}`, 400, "invalid_request_error", "max_tokens"},
		{"empty text", ok, `{"max_tokens":10,"stream":true,"messages":[{"role":"user","content":[{"type":"text","text":""}]}]}`,
			400, "invalid_request_error", "text content blocks must be non-empty"},
		{"orphan result", ok, `{"max_tokens":10,"stream":true,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"x"}]}]}`,
			400, "invalid_request_error", "unexpected `tool_use_id`"},
		{"unanswered use", ok, `{"max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"lookup","input":{}}]},{"role":"user","content":"and?"}]}`,
			400, "invalid_request_error", "without `tool_result` blocks"},
	} {
		status, body := post(tc.headers, tc.body)
		require.Equal(t, tc.status, status, tc.name)
		require.Equal(t, "error", body["type"], tc.name)
		e := body["error"].(map[string]any)
		require.Equal(t, tc.typ, e["type"], tc.name)
		require.Contains(t, e["message"], tc.message, tc.name)
	}
	_, err := llm.NewMessages(llm.Endpoint{BaseURL: srv.URL, APIKey: "k"}).Stream(context.Background(),
		llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}, func(llm.Event) error { return nil })
	require.NoError(t, err, "the adapter's request is accepted")
}
