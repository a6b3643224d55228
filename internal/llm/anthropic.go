package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// APIMessages names the Anthropic messages family in errors.
const APIMessages = "messages"

// AnthropicVersion is the anthropic-version header the adapter sends.
const AnthropicVersion = "2023-06-01"

// Messages is the Anthropic messages adapter (POST {base_url}/v1/messages,
// streamed). BaseURL is the provider type's base_url, https://api.anthropic.com
// by default.
type Messages struct {
	endpoint Endpoint
	// Claude on Vertex AI: the model is in the URL, the version in the body,
	// and prepare adds the access token.
	vertex   bool
	modelURL func(model string) string
	prepare  func(ctx context.Context, req *http.Request) error
}

// NewMessages returns the adapter for ep.
func NewMessages(ep Endpoint) *Messages {
	if ep.AuthHeader == "" {
		ep.AuthHeader, ep.AuthPrefix = "x-api-key", ""
	}
	return &Messages{endpoint: ep}
}

var _ Model = (*Messages)(nil)

// Stream implements Model.
func (m *Messages) Stream(ctx context.Context, req Request, fn func(Event) error) (Response, error) {
	if err := req.Validate(); err != nil {
		return Response{}, err
	}
	b := messagesBody(req)
	u := strings.TrimSuffix(m.endpoint.BaseURL, "/") + "/v1/messages"
	headers := map[string]string{"anthropic-version": AnthropicVersion}
	if m.vertex {
		delete(b, "model")
		b["anthropic_version"] = VertexAnthropicVersion
		u, headers = m.modelURL(req.Model), nil
	}
	body, err := json.Marshal(b)
	if err != nil {
		return Response{}, fmt.Errorf("llm: encoding the messages request: %w", err)
	}
	return call{
		api: APIMessages, url: u, body: body, headers: headers,
		authHeader: m.endpoint.AuthHeader, authPrefix: m.endpoint.AuthPrefix,
		decode: decodeMessages, endpointCfg: m.endpoint, prepare: m.prepare, limits: req.outputLimits(),
	}.run(ctx, fn)
}

type amMessage struct {
	Role    string    `json:"role"`
	Content []amBlock `json:"content"`
}

// amBlock is a request content block: text, tool_use or tool_result.
type amBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   *string         `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature string          `json:"signature,omitempty"`
	Data      string          `json:"data,omitempty"`
}

type amTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

func messagesBody(req Request) map[string]any {
	s := req.effective()
	maxTokens := s.maxTokens()
	if maxTokens == 0 {
		maxTokens = DefaultMaxOutputTokens
		if s.ThinkingBudgetTokens != nil && *s.ThinkingBudgetTokens >= maxTokens {
			// The budget must stay below max_tokens; leave room for the answer.
			maxTokens = *s.ThinkingBudgetTokens + DefaultMaxOutputTokens
		}
	}
	b := map[string]any{
		"model":      req.Model,
		"max_tokens": maxTokens,
		"messages":   amMessages(req.Messages),
		"stream":     true,
	}
	if req.System != "" {
		b["system"] = req.System
	}
	put(b, "temperature", s.Temperature)
	put(b, "top_p", s.TopP)
	put(b, "top_k", s.TopK)
	if stop := s.stops(); len(stop) > 0 {
		b["stop_sequences"] = stop
	}
	if s.ThinkingBudgetTokens != nil {
		b["thinking"] = map[string]any{"type": "enabled", "budget_tokens": *s.ThinkingBudgetTokens}
	}
	if len(req.Tools) > 0 {
		tools := make([]amTool, len(req.Tools))
		for i, t := range req.Tools {
			schema := t.Parameters
			if len(schema) == 0 {
				schema = emptyObjectSchema
			}
			tools[i] = amTool{Name: t.Name, Description: t.Description, InputSchema: schema}
		}
		b["tools"] = tools
	}
	return b
}

// amMessages maps the conversation: tool results become tool_result blocks of
// user messages, and consecutive messages of one role merge into one, so the
// results of parallel calls travel together as the API asks.
func amMessages(msgs []Message) []amMessage {
	var out []amMessage
	for _, m := range msgs {
		role, blocks := amBlocks(m)
		if len(blocks) == 0 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			continue
		}
		out = append(out, amMessage{Role: role, Content: blocks})
	}
	return out
}

func amBlocks(m Message) (string, []amBlock) {
	switch m.Role {
	case RoleTool:
		text := m.Text
		return "user", []amBlock{{Type: "tool_result", ToolUseID: m.ToolCallID, Content: &text, IsError: m.IsError}}
	case RoleAssistant:
		var blocks []amBlock
		for _, r := range m.Reasoning {
			if r.Redacted {
				blocks = append(blocks, amBlock{Type: "redacted_thinking", Data: r.Text})
				continue
			}
			text := r.Text
			blocks = append(blocks, amBlock{Type: "thinking", Thinking: &text, Signature: r.Signature})
		}
		if m.Text != "" {
			blocks = append(blocks, amBlock{Type: "text", Text: m.Text})
		}
		for _, tc := range m.ToolCalls {
			input := json.RawMessage(tc.Arguments)
			if len(input) == 0 {
				input = json.RawMessage("{}")
			}
			blocks = append(blocks, amBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: input})
		}
		return "assistant", blocks
	default:
		if m.Text == "" {
			return "user", nil // the API refuses empty text blocks
		}
		return "user", []amBlock{{Type: "text", Text: m.Text}}
	}
}

// amEvent is any streamed event's data; Type says which members are set.
type amEvent struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message struct {
		Usage amUsage `json:"usage"`
	} `json:"message"`
	ContentBlock struct {
		Type      string `json:"type"`
		ID        string `json:"id"`
		Name      string `json:"name"`
		Text      string `json:"text"`
		Thinking  string `json:"thinking"`
		Signature string `json:"signature"`
		Data      string `json:"data"`
	} `json:"content_block"`
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *amUsage `json:"usage"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

type amUsage struct {
	InputTokens              int  `json:"input_tokens"`
	OutputTokens             *int `json:"output_tokens"`
	CacheCreationInputTokens int  `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int  `json:"cache_read_input_tokens"`
}

// amAssembly accumulates a streamed message.
type amAssembly struct {
	emit    func(Event) error
	started bool
	text    strings.Builder
	calls   []ToolCall
	blocks  map[int]int // content block index -> tool call index, for tool_use blocks
	args    pieces      // by tool call index
	reason  []Reasoning
	thought pieces      // reasoning text by reasoning index
	signed  pieces      // signatures by reasoning index
	rblocks map[int]int // content block index -> reasoning index, for thinking blocks
	usage   Usage
	stop    string
}

func decodeMessages(_ context.Context, body io.Reader, maxEvent int, emit func(Event) error) (Response, error) {
	a := &amAssembly{emit: emit, blocks: map[int]int{}, rblocks: map[int]int{}}
	sse := newSSEReader(body, maxEvent)
	for {
		ev, err := sse.next()
		if errors.Is(err, io.EOF) {
			return Response{}, ErrStreamCut
		}
		if err != nil {
			return Response{}, err
		}
		var e amEvent
		if err := json.Unmarshal([]byte(ev.data), &e); err != nil {
			return Response{}, fmt.Errorf("decoding a %q event: %w", ev.event, err)
		}
		if e.Type == "message_stop" {
			return a.finish()
		}
		if err := a.event(e); err != nil {
			return Response{}, err
		}
	}
}

func (a *amAssembly) event(e amEvent) error {
	switch e.Type {
	case "message_start":
		a.started = true
		u := e.Message.Usage
		a.usage.InputTokens = u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
		if u.OutputTokens != nil {
			a.usage.OutputTokens = *u.OutputTokens
		}
	case "content_block_start":
		return a.blockStart(e)
	case "content_block_delta":
		return a.blockDelta(e)
	case "content_block_stop":
		if i, ok := a.blocks[e.Index]; ok {
			a.calls[i].Arguments = a.args.text(i)
			if a.calls[i].Arguments == "" {
				a.calls[i].Arguments = "{}"
			}
			return a.emit(Event{Kind: EventToolCallDone, ToolIndex: i, ToolCall: a.calls[i]})
		}
	case "message_delta":
		if e.Delta.StopReason != "" {
			a.stop = e.Delta.StopReason
		}
		if e.Usage != nil && e.Usage.OutputTokens != nil {
			a.usage.OutputTokens = *e.Usage.OutputTokens
			return a.emit(Event{Kind: EventUsage, Usage: a.usage})
		}
	case "error":
		return &Error{
			API: APIMessages, Type: e.Error.Type, Message: e.Error.Message,
			Retryable: e.Error.Type == "overloaded_error" || e.Error.Type == "api_error" || e.Error.Type == "rate_limit_error",
		}
	}
	// ping and event types added later are ignored, as the API asks.
	return nil
}

func (a *amAssembly) blockStart(e amEvent) error {
	if !a.started {
		return errors.New("content before message_start")
	}
	switch e.ContentBlock.Type {
	case "text":
		if e.ContentBlock.Text != "" {
			a.text.WriteString(e.ContentBlock.Text)
			return a.emit(Event{Kind: EventTextDelta, Text: e.ContentBlock.Text})
		}
	case "tool_use":
		if e.ContentBlock.ID == "" || e.ContentBlock.Name == "" {
			return &Error{API: APIMessages, Message: "the model streamed a tool_use block without id or name"}
		}
		i := len(a.calls)
		a.blocks[e.Index] = i
		a.calls = append(a.calls, ToolCall{ID: e.ContentBlock.ID, Name: e.ContentBlock.Name})
		return a.emit(Event{Kind: EventToolCallStart, ToolIndex: i, ToolCall: ToolCall{ID: e.ContentBlock.ID, Name: e.ContentBlock.Name}})
	case "thinking", "redacted_thinking":
		// Kept for the next request, not streamed (decision 0028).
		r := Reasoning{Text: e.ContentBlock.Thinking, Signature: e.ContentBlock.Signature}
		if e.ContentBlock.Type == "redacted_thinking" {
			r = Reasoning{Text: e.ContentBlock.Data, Redacted: true}
		}
		i := len(a.reason)
		a.rblocks[e.Index] = i
		a.reason = append(a.reason, r)
		a.thought.set(i, r.Text)
		a.signed.set(i, r.Signature)
		return a.emit(Event{Kind: eventKeptEntry, Text: r.Text + r.Signature})
	}
	return nil
}

func (a *amAssembly) blockDelta(e amEvent) error {
	switch e.Delta.Type {
	case "text_delta":
		if e.Delta.Text == "" {
			return nil
		}
		a.text.WriteString(e.Delta.Text)
		return a.emit(Event{Kind: EventTextDelta, Text: e.Delta.Text})
	case "input_json_delta":
		i, ok := a.blocks[e.Index]
		if !ok {
			return fmt.Errorf("input_json_delta for block %d, which is no tool_use", e.Index)
		}
		if e.Delta.PartialJSON == "" {
			return nil
		}
		a.args.add(i, e.Delta.PartialJSON)
		return a.emit(Event{Kind: EventToolCallDelta, ToolIndex: i, Text: e.Delta.PartialJSON})
	case "thinking_delta", "signature_delta":
		if i, ok := a.rblocks[e.Index]; ok {
			a.thought.add(i, e.Delta.Thinking)
			a.signed.add(i, e.Delta.Signature)
			return a.emit(Event{Kind: eventKeptDelta, Text: e.Delta.Thinking + e.Delta.Signature})
		}
	}
	return nil
}

func (a *amAssembly) finish() (Response, error) {
	if a.stop == "" {
		return Response{}, fmt.Errorf("%w: no stop_reason before message_stop", ErrStreamCut)
	}
	reason := amFinishReason(a.stop)
	if err := a.emit(Event{Kind: EventFinish, FinishReason: reason}); err != nil {
		return Response{}, err
	}
	for i := range a.reason {
		a.reason[i].Text, a.reason[i].Signature = a.thought.text(i), a.signed.text(i)
	}
	msg := Message{Role: RoleAssistant, Text: a.text.String(), ToolCalls: a.calls, Reasoning: a.reason}
	return Response{Message: msg, Usage: a.usage, FinishReason: reason, VendorFinishReason: a.stop}, nil
}

func amFinishReason(r string) FinishReason {
	switch r {
	case "end_turn", "stop_sequence":
		return FinishStop
	case "tool_use":
		return FinishToolCalls
	case "max_tokens", "model_context_window_exceeded":
		return FinishLength
	case "refusal":
		return FinishContentFilter
	}
	return FinishOther
}
