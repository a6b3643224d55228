package llm_test

import (
	"context"
	"net/url"
	"reflect"
	"testing"

	"github.com/svcdev/svc/internal/llm"
)

func ccChunk(delta, finish string) frame {
	return frame{data: `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":` + finish + `}]}`}
}

func ccUsage(in, out int) frame {
	return frame{data: `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[],"usage":{"prompt_tokens":` + itoa(in) + `,"completion_tokens":` + itoa(out) + `,"total_tokens":` + itoa(in+out) + `}}`}
}

var ccDone = frame{data: "[DONE]"}

// ccToolTurn is the first answer of the scripted conversation: some text, then
// two parallel tool calls whose arguments arrive in pieces.
var ccToolTurn = []frame{
	ccChunk(`{"role":"assistant","content":"","refusal":null}`, "null"),
	ccChunk(`{"content":"Let me "}`, "null"),
	ccChunk(`{"content":"check."}`, "null"),
	ccChunk(`{"tool_calls":[{"index":0,"id":"call_paris","type":"function","function":{"name":"get_weather","arguments":""}}]}`, "null"),
	ccChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"ci"}}]}`, "null"),
	ccChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"ty\": \"Paris\"}"}}]}`, "null"),
	ccChunk(`{"tool_calls":[{"index":1,"id":"call_rome","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Rome\"}"}}]}`, "null"),
	ccChunk(`{}`, `"tool_calls"`),
	ccUsage(40, 25),
	ccDone,
}

// ccFinalTurn is the second answer: the final text.
var ccFinalTurn = []frame{
	ccChunk(`{"role":"assistant","content":""}`, "null"),
	ccChunk(`{"content":"Sunny in Paris, "}`, "null"),
	ccChunk(`{"content":"rain in Rome."}`, "null"),
	ccChunk(`{}`, `"stop"`),
	ccUsage(90, 9),
	ccDone,
}

func TestChatCompletionsConversationWithToolCalls(t *testing.T) {
	v := newVendor(t, sse(ccToolTurn...), sse(ccFinalTurn...))
	ep := v.endpoint("/v1")
	ep.Headers = map[string]string{"OpenAI-Organization": "org-1", "OpenAI-Project": ""}
	model := llm.NewChatCompletions(ep, llm.ChatCompletionsOptions{MaxTokensParam: "max_completion_tokens"})
	temp := 0.2
	req := llm.Request{
		Model: "gpt-test", System: "You are terse.", MaxOutputTokens: 500, Temperature: &temp, Tools: weatherTools,
		Messages: []llm.Message{{Role: llm.RoleUser, Text: "Weather in Paris and Rome?"}},
	}

	var c1 collect
	r1, err := model.Stream(context.Background(), req, c1.fn)
	if err != nil {
		t.Fatalf("first turn: %v", err)
	}
	wantCalls := []llm.ToolCall{
		{ID: "call_paris", Name: "get_weather", Arguments: `{"city": "Paris"}`},
		{ID: "call_rome", Name: "get_weather", Arguments: `{"city": "Rome"}`},
	}
	if r1.Message.Text != "Let me check." || !reflect.DeepEqual(r1.Message.ToolCalls, wantCalls) {
		t.Fatalf("first message = %+v", r1.Message)
	}
	if r1.FinishReason != llm.FinishToolCalls || r1.VendorFinishReason != "tool_calls" || r1.Usage != (llm.Usage{InputTokens: 40, OutputTokens: 25}) || r1.Attempts != 1 {
		t.Fatalf("first response = %+v", r1)
	}
	wantKinds := []llm.EventKind{
		llm.EventTextDelta, llm.EventTextDelta,
		llm.EventToolCallStart, llm.EventToolCallDelta, llm.EventToolCallDelta,
		llm.EventToolCallStart, llm.EventToolCallDelta,
		llm.EventToolCallDone, llm.EventToolCallDone,
		llm.EventUsage, llm.EventFinish,
	}
	if got := c1.kinds(); !reflect.DeepEqual(got, wantKinds) {
		t.Fatalf("events = %v, want %v", got, wantKinds)
	}
	if e := c1.events[5]; e.ToolIndex != 1 || e.ToolCall.ID != "call_rome" || e.ToolCall.Name != "get_weather" {
		t.Fatalf("second tool call start = %+v", e)
	}
	if e := c1.events[8]; e.ToolIndex != 1 || e.ToolCall != wantCalls[1] {
		t.Fatalf("second tool call done = %+v", e)
	}

	req.Messages = append(req.Messages, r1.Message,
		llm.Message{Role: llm.RoleTool, ToolCallID: "call_paris", Text: "sunny, 21C"},
		llm.Message{Role: llm.RoleTool, ToolCallID: "call_rome", Text: "rain, 14C"})
	var c2 collect
	r2, err := model.Stream(context.Background(), req, c2.fn)
	if err != nil {
		t.Fatalf("second turn: %v", err)
	}
	if r2.Message.Text != "Sunny in Paris, rain in Rome." || len(r2.Message.ToolCalls) != 0 || r2.FinishReason != llm.FinishStop || c2.text() != r2.Message.Text {
		t.Fatalf("second response = %+v", r2)
	}

	got := v.requests()
	if len(got) != 2 {
		t.Fatalf("%d requests, want 2", len(got))
	}
	for _, r := range got {
		if r.path != "/v1/chat/completions" {
			t.Errorf("path = %q", r.path)
		}
		if a := r.header.Get("Authorization"); a != "Bearer "+testKey {
			t.Errorf("Authorization = %q", a)
		}
		if o := r.header.Get("OpenAI-Organization"); o != "org-1" {
			t.Errorf("OpenAI-Organization = %q", o)
		}
		if _, ok := r.header["Openai-Project"]; ok {
			t.Error("an empty extra header was sent")
		}
		if ct := r.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type = %q", ct)
		}
		b := r.body
		if b["model"] != "gpt-test" || b["stream"] != true || get(t, b, "stream_options", "include_usage") != true ||
			b["max_completion_tokens"] != 500.0 || b["temperature"] != 0.2 {
			t.Errorf("body = %s", mustJSON(t, b))
		}
		if _, ok := b["max_tokens"]; ok {
			t.Error("max_tokens sent with MaxTokensParam max_completion_tokens")
		}
		if get(t, b, "tools", 0, "type") != "function" || get(t, b, "tools", 0, "function", "name") != "get_weather" ||
			get(t, b, "tools", 0, "function", "parameters", "required", 0) != "city" {
			t.Errorf("tools = %s", mustJSON(t, b["tools"]))
		}
		if get(t, b, "messages", 0, "role") != "system" || get(t, b, "messages", 0, "content") != "You are terse." ||
			get(t, b, "messages", 1, "role") != "user" || get(t, b, "messages", 1, "content") != "Weather in Paris and Rome?" {
			t.Errorf("messages = %s", mustJSON(t, b["messages"]))
		}
	}
	msgs := get(t, got[1].body, "messages").([]any)
	if len(msgs) != 5 {
		t.Fatalf("second request has %d messages: %s", len(msgs), mustJSON(t, msgs))
	}
	assistant := mustJSON(t, msgs[2])
	want := `{"content":"Let me check.","role":"assistant","tool_calls":[{"function":{"arguments":"{\"city\": \"Paris\"}","name":"get_weather"},"id":"call_paris","type":"function"},{"function":{"arguments":"{\"city\": \"Rome\"}","name":"get_weather"},"id":"call_rome","type":"function"}]}`
	if assistant != want {
		t.Errorf("assistant message = %s\nwant %s", assistant, want)
	}
	if m := mustJSON(t, msgs[3]); m != `{"content":"sunny, 21C","role":"tool","tool_call_id":"call_paris"}` {
		t.Errorf("tool message = %s", m)
	}
	if m := mustJSON(t, msgs[4]); m != `{"content":"rain, 14C","role":"tool","tool_call_id":"call_rome"}` {
		t.Errorf("tool message = %s", m)
	}
}

// Azure-style: a query string, a custom auth header without prefix, and the
// default max_tokens member; an assistant message with only tool calls sends
// null content.
func TestChatCompletionsAuthHeaderQueryAndNullContent(t *testing.T) {
	v := newVendor(t, sse(ccFinalTurn...))
	ep := v.endpoint("/openai/deployments/dep1")
	ep.AuthHeader = "api-key"
	model := llm.NewChatCompletions(ep, llm.ChatCompletionsOptions{Query: url.Values{"api-version": {"2024-10-21"}}})
	req := llm.Request{Model: "dep1", MaxOutputTokens: 100, Messages: []llm.Message{
		{Role: llm.RoleUser, Text: "hi"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "noop"}}},
		{Role: llm.RoleTool, ToolCallID: "c1", Text: "done"},
	}}
	if _, err := model.Stream(context.Background(), req, func(llm.Event) error { return nil }); err != nil {
		t.Fatal(err)
	}
	r := v.requests()[0]
	if r.path != "/openai/deployments/dep1/chat/completions" || r.query != "api-version=2024-10-21" {
		t.Errorf("url = %s?%s", r.path, r.query)
	}
	if r.header.Get("api-key") != testKey || r.header.Get("Authorization") != "" {
		t.Errorf("auth headers = %v", r.header)
	}
	if r.body["max_tokens"] != 100.0 {
		t.Errorf("max_tokens = %v", r.body["max_tokens"])
	}
	if _, ok := r.body["temperature"]; ok {
		t.Error("temperature sent though unset")
	}
	if _, ok := r.body["tools"]; ok {
		t.Error("tools sent though none")
	}
	if m := mustJSON(t, get(t, r.body, "messages", 1)); m != `{"content":null,"role":"assistant","tool_calls":[{"function":{"arguments":"{}","name":"noop"},"id":"c1","type":"function"}]}` {
		t.Errorf("assistant message = %s", m)
	}
}
