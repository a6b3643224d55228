package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// memoryTools are tools as svc offers them in chat completions.
var memoryTools = []any{
	map[string]any{"type": "function", "function": map[string]any{"name": "memory_search", "parameters": map[string]any{
		"type": "object", "required": []any{"memory", "query"}, "properties": map[string]any{
			"memory": map[string]any{"type": "string", "enum": []any{"mem_1", "mem_2"}},
			"query":  map[string]any{"type": "string", "maxLength": 8},
			"limit":  map[string]any{"type": "integer", "minimum": 1},
		}}}},
	map[string]any{"type": "function", "function": map[string]any{"name": "memory_write", "parameters": map[string]any{
		"type": "object", "required": []any{"memory", "content", "metadata"}, "properties": map[string]any{
			"memory":   map[string]any{"type": "string", "enum": []any{"mem_1"}},
			"content":  map[string]any{"type": "string"},
			"metadata": map[string]any{"type": "object"},
		}}}},
}

func newServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer((&server{model: "svc-demo", started: 1}).routes())
	t.Cleanup(srv.Close)
	return srv
}

func post(t *testing.T, srv *httptest.Server, path string, body any) (*http.Response, []byte) {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(string(b)))
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, out
}

// chunks parses a streamed answer's data lines; the last must be [DONE].
func chunks(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	done := false
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		require.False(t, done, "nothing after [DONE]")
		if line == "[DONE]" {
			done = true
			continue
		}
		var c map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &c))
		out = append(out, c)
	}
	require.True(t, done)
	return out
}

// TestStreamedToolCallAndUsage: offered tools, the first turn streams a few
// words and calls the tool the message names, with arguments made from its
// schema; the last chunk carries the usage counted from the request and the
// answer.
func TestStreamedToolCallAndUsage(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	messages := []any{
		map[string]any{"role": "system", "content": "Answer briefly."},
		map[string]any{"role": "user", "content": `Use memory_write to note "the demo runs offline".`},
	}
	resp, body := post(t, srv, "/v1/chat/completions", map[string]any{
		"model": "svc-demo", "stream": true, "stream_options": map[string]any{"include_usage": true},
		"messages": messages, "tools": memoryTools,
	})
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	cs := chunks(t, body)

	var text strings.Builder
	var call map[string]any
	var finish any
	for _, c := range cs[:len(cs)-1] {
		choice := c["choices"].([]any)[0].(map[string]any)
		delta := choice["delta"].(map[string]any)
		if s, ok := delta["content"].(string); ok {
			text.WriteString(s)
		}
		if tc, ok := delta["tool_calls"].([]any); ok {
			call = tc[0].(map[string]any)
		}
		if choice["finish_reason"] != nil {
			finish = choice["finish_reason"]
		}
	}
	require.Greater(t, len(cs), 4, "the answer comes in several chunks")
	require.Equal(t, "Let me call memory_write. ", text.String())
	require.Equal(t, "tool_calls", finish)
	fn := call["function"].(map[string]any)
	require.Equal(t, "memory_write", fn["name"])
	require.JSONEq(t, `{"memory":"mem_1","content":"the demo runs offline","metadata":{}}`, fn["arguments"].(string))

	usage := cs[len(cs)-1]["usage"].(map[string]any)
	m, _ := json.Marshal(messages)
	tl, _ := json.Marshal(memoryTools)
	prompt := (len(m) + len(tl) + 3) / 4
	completion := (len(text.String()) + len("memory_write") + len(fn["arguments"].(string)) + 3) / 4
	require.Equal(t, map[string]any{"prompt_tokens": float64(prompt), "completion_tokens": float64(completion),
		"total_tokens": float64(prompt + completion)}, usage)
}

// TestAnswersFromTheToolResult: once the tool answered, the model quotes it
// and stops; without include_usage no usage chunk is sent; the first tool is
// called when the message names none, its string cut to maxLength.
func TestAnswersFromTheToolResult(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	resp, body := post(t, srv, "/v1/chat/completions", map[string]any{
		"model": "svc-demo", "stream": true, "tools": memoryTools,
		"messages": []any{
			map[string]any{"role": "user", "content": "What do you know?"},
			map[string]any{"role": "assistant", "content": "Let me call memory_search. ", "tool_calls": []any{map[string]any{
				"id": "call_1", "type": "function", "function": map[string]any{"name": "memory_search", "arguments": `{}`}}}},
			map[string]any{"role": "tool", "tool_call_id": "call_1", "content": `{"records":[]}`},
		},
	})
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	var text strings.Builder
	for _, c := range chunks(t, body) {
		require.NotContains(t, c, "usage")
		delta := c["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
		require.NotContains(t, delta, "tool_calls")
		if s, ok := delta["content"].(string); ok {
			text.WriteString(s)
		}
	}
	require.True(t, strings.HasPrefix(text.String(), `I called memory_search and it answered: {"records":[]}`), text.String())

	resp, body = post(t, srv, "/v1/chat/completions", map[string]any{
		"model": "svc-demo", "tools": memoryTools, "messages": []any{map[string]any{"role": "user", "content": "What do you know?"}},
	})
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	var whole struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct {
				ToolCalls []struct {
					Function struct{ Name, Arguments string } `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage map[string]int `json:"usage"`
	}
	require.NoError(t, json.Unmarshal(body, &whole))
	require.Equal(t, "chat.completion", whole.Object)
	require.Equal(t, "tool_calls", whole.Choices[0].FinishReason)
	require.Equal(t, "memory_search", whole.Choices[0].Message.ToolCalls[0].Function.Name)
	require.JSONEq(t, `{"memory":"mem_1","query":"What do "}`, whole.Choices[0].Message.ToolCalls[0].Function.Arguments)
	require.Positive(t, whole.Usage["prompt_tokens"])
}

// TestModelsErrorsAndHooks: the model list, OpenAI's errors for an unknown
// model and path, and webhook deliveries taken with 204.
func TestModelsErrorsAndHooks(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	resp, err := http.Get(srv.URL + "/v1/models")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.JSONEq(t, `{"object":"list","data":[{"id":"svc-demo","object":"model","created":1,"owned_by":"svc-demo"}]}`, string(b))

	resp, body := post(t, srv, "/v1/chat/completions", map[string]any{"model": "gpt-5", "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Contains(t, string(body), `"code":"model_not_found"`)
	resp, body = post(t, srv, "/v1/responses", map[string]any{})
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Contains(t, string(body), `"type":"invalid_request_error"`)

	resp, _ = post(t, srv, "/hooks/agents", map[string]any{"type": "agent.revision_published"})
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
}
