package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strings"
)

// APIChatCompletions names the OpenAI chat completions family in errors.
const APIChatCompletions = "chat_completions"

// ChatCompletions is the OpenAI chat completions adapter (POST
// {base_url}/chat/completions, streamed). It serves openai and every
// OpenAI-compatible type; it knows no vendor, only the Endpoint it is given.
type ChatCompletions struct {
	endpoint    Endpoint
	query       url.Values
	maxParam    string
	deployments bool
}

// ChatCompletionsOptions are the differences between the vendors that speak
// chat completions.
type ChatCompletionsOptions struct {
	// Query is added to the URL (Azure's api-version).
	Query url.Values
	// MaxTokensParam is the body member carrying Request.MaxOutputTokens:
	// "max_completion_tokens" (OpenAI, Azure; required by reasoning models) or
	// "max_tokens" (the default, which the compatible vendors all accept).
	MaxTokensParam string
	// Deployments puts the model in the path, as Azure OpenAI wants:
	// POST {BaseURL}/deployments/{Request.Model}/chat/completions.
	Deployments bool
}

// NewChatCompletions returns the adapter for ep.
func NewChatCompletions(ep Endpoint, opts ChatCompletionsOptions) *ChatCompletions {
	if ep.AuthHeader == "" {
		ep.AuthHeader, ep.AuthPrefix = "Authorization", "Bearer "
	}
	if opts.MaxTokensParam == "" {
		opts.MaxTokensParam = "max_tokens"
	}
	return &ChatCompletions{endpoint: ep, query: opts.Query, maxParam: opts.MaxTokensParam, deployments: opts.Deployments}
}

var _ Model = (*ChatCompletions)(nil)

// Stream implements Model.
func (c *ChatCompletions) Stream(ctx context.Context, req Request, fn func(Event) error) (Response, error) {
	if err := req.Validate(); err != nil {
		return Response{}, err
	}
	body, err := json.Marshal(c.body(req))
	if err != nil {
		return Response{}, fmt.Errorf("llm: encoding the chat completions request: %w", err)
	}
	u := strings.TrimSuffix(c.endpoint.BaseURL, "/")
	if c.deployments {
		u += "/deployments/" + url.PathEscape(req.Model)
	}
	u += "/chat/completions"
	if len(c.query) > 0 {
		u += "?" + c.query.Encode()
	}
	return call{
		api: APIChatCompletions, url: u, body: body,
		authHeader: c.endpoint.AuthHeader, authPrefix: c.endpoint.AuthPrefix,
		decode: decodeChatCompletions, endpointCfg: c.endpoint, limits: req.outputLimits(),
	}.run(ctx, fn)
}

type ccMessage struct {
	Role       string       `json:"role"`
	Content    *string      `json:"content"`
	ToolCalls  []ccToolCall `json:"tool_calls,omitempty"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
}

type ccToolCall struct {
	ID       string     `json:"id"`
	Type     string     `json:"type"`
	Function ccFunction `json:"function"`
}

type ccFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type ccTool struct {
	Type     string         `json:"type"`
	Function ccToolFunction `json:"function"`
}

type ccToolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// emptyObjectSchema is the parameters of a tool declared without any.
var emptyObjectSchema = json.RawMessage(`{"type":"object","properties":{}}`)

func (c *ChatCompletions) body(req Request) map[string]any {
	msgs := make([]ccMessage, 0, len(req.Messages)+1)
	if req.System != "" {
		msgs = append(msgs, ccMessage{Role: "system", Content: &req.System})
	}
	for _, m := range req.Messages {
		msgs = append(msgs, ccMessageOf(m))
	}
	b := map[string]any{
		"model":          req.Model,
		"messages":       msgs,
		"stream":         true,
		"stream_options": map[string]any{"include_usage": true},
	}
	s := req.effective()
	if n := s.maxTokens(); n > 0 {
		b[c.maxParam] = n
	}
	put(b, "temperature", s.Temperature)
	put(b, "top_p", s.TopP)
	put(b, "frequency_penalty", s.FrequencyPenalty)
	put(b, "presence_penalty", s.PresencePenalty)
	put(b, "seed", s.Seed)
	if stop := s.stops(); len(stop) > 0 {
		b["stop"] = stop
	}
	putString(b, "reasoning_effort", s.ReasoningEffort)
	if len(req.Tools) > 0 {
		// The API refuses parallel_tool_calls without tools.
		put(b, "parallel_tool_calls", s.ParallelToolCalls)
		tools := make([]ccTool, len(req.Tools))
		for i, t := range req.Tools {
			params := t.Parameters
			if len(params) == 0 {
				params = emptyObjectSchema
			}
			tools[i] = ccTool{Type: "function", Function: ccToolFunction{Name: t.Name, Description: t.Description, Parameters: params}}
		}
		b["tools"] = tools
	}
	return b
}

func ccMessageOf(m Message) ccMessage {
	text := m.Text
	out := ccMessage{Role: string(m.Role), Content: &text}
	switch m.Role {
	case RoleAssistant:
		if text == "" && len(m.ToolCalls) > 0 {
			out.Content = nil // null content with tool calls, as the API documents
		}
		for _, tc := range m.ToolCalls {
			args := tc.Arguments
			if args == "" {
				args = "{}"
			}
			out.ToolCalls = append(out.ToolCalls, ccToolCall{ID: tc.ID, Type: "function", Function: ccFunction{Name: tc.Name, Arguments: args}})
		}
	case RoleTool:
		out.ToolCallID = m.ToolCallID
	}
	return out
}

// ccChunk is one chat.completion.chunk (or an error a vendor streams).
type ccChunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content   *string `json:"content"`
			ToolCalls []struct {
				Index    *int   `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// ccAssembly accumulates a streamed chat completion.
type ccAssembly struct {
	emit   func(Event) error
	text   strings.Builder
	calls  map[int]*ToolCall // by the vendor's tool call index
	order  map[int]int       // vendor index -> ToolIndex
	args   pieces            // by ToolIndex
	last   int               // vendor index of the latest call
	next   int               // a vendor index above every one seen
	done   bool              // tool calls were completed
	usage  Usage
	finish string
}

func decodeChatCompletions(_ context.Context, body io.Reader, maxEvent int, emit func(Event) error) (Response, error) {
	a := &ccAssembly{emit: emit, calls: map[int]*ToolCall{}, order: map[int]int{}}
	sse := newSSEReader(body, maxEvent)
	for {
		ev, err := sse.next()
		if errors.Is(err, io.EOF) {
			return Response{}, ErrStreamCut
		}
		if err != nil {
			return Response{}, err
		}
		if strings.TrimSpace(ev.data) == "[DONE]" {
			return a.finishStream()
		}
		var ch ccChunk
		if err := json.Unmarshal([]byte(ev.data), &ch); err != nil {
			return Response{}, fmt.Errorf("decoding a chat completion chunk: %w", err)
		}
		if err := a.chunk(ch); err != nil {
			return Response{}, err
		}
	}
}

func (a *ccAssembly) chunk(ch ccChunk) error {
	if len(ch.Error) > 0 && string(ch.Error) != "null" {
		typ, msg := vendorError([]byte(`{"error":` + string(ch.Error) + `}`))
		return &Error{API: APIChatCompletions, Type: clean(typ), Message: clean(msg), Retryable: true}
	}
	for _, choice := range ch.Choices {
		if choice.Index != 0 {
			continue // n > 1 is never requested
		}
		if d := choice.Delta.Content; d != nil && *d != "" {
			a.text.WriteString(*d)
			if err := a.emit(Event{Kind: EventTextDelta, Text: *d}); err != nil {
				return err
			}
		}
		for _, tc := range choice.Delta.ToolCalls {
			if err := a.toolDelta(a.indexOf(tc.Index, tc.ID), tc.ID, tc.Function.Name, tc.Function.Arguments); err != nil {
				return err
			}
		}
		if choice.FinishReason != nil && *choice.FinishReason != "" {
			a.finish = *choice.FinishReason
			if err := a.completeCalls(); err != nil {
				return err
			}
		}
	}
	if ch.Usage != nil {
		a.usage = Usage{InputTokens: ch.Usage.PromptTokens, OutputTokens: ch.Usage.CompletionTokens}
		return a.emit(Event{Kind: EventUsage, Usage: a.usage})
	}
	return nil
}

// indexOf is the vendor index of a tool call delta. A few compatible vendors
// leave index out: a new id then starts a new call, and a delta without id
// continues the latest one.
func (a *ccAssembly) indexOf(index *int, id string) int {
	if index != nil {
		return *index
	}
	if len(a.calls) == 0 {
		return 0
	}
	if id != "" && a.calls[a.last].ID != "" && a.calls[a.last].ID != id {
		return a.next
	}
	return a.last
}

func (a *ccAssembly) toolDelta(index int, id, name, args string) error {
	call, ok := a.calls[index]
	if !ok {
		if a.done {
			return errors.New("a tool call started after the choice finished")
		}
		call = &ToolCall{ID: id, Name: name}
		a.calls[index] = call
		a.order[index] = len(a.order)
		a.last, a.next = index, max(a.next, index+1)
		if err := a.emit(Event{Kind: EventToolCallStart, ToolIndex: a.order[index], ToolCall: ToolCall{ID: id, Name: name}}); err != nil {
			return err
		}
	} else {
		// Some vendors repeat or split the id and name; keep the first seen.
		if call.ID == "" {
			call.ID = id
		}
		if call.Name == "" {
			call.Name = name
		}
	}
	if args == "" {
		return nil
	}
	a.args.add(a.order[index], args)
	return a.emit(Event{Kind: EventToolCallDelta, ToolIndex: a.order[index], Text: args})
}

// completeCalls emits EventToolCallDone for every call, in order, once.
func (a *ccAssembly) completeCalls() error {
	if a.done {
		return nil
	}
	a.done = true
	for _, index := range a.indexes() {
		call := a.calls[index]
		call.Arguments = a.args.text(a.order[index])
		if call.Arguments == "" {
			call.Arguments = "{}"
		}
		if call.ID == "" || call.Name == "" {
			return &Error{API: APIChatCompletions, Message: "the model streamed a tool call without id or name"}
		}
		if err := a.emit(Event{Kind: EventToolCallDone, ToolIndex: a.order[index], ToolCall: *call}); err != nil {
			return err
		}
	}
	return nil
}

func (a *ccAssembly) indexes() []int {
	idx := make([]int, 0, len(a.calls))
	for i := range a.calls {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(x, y int) bool { return a.order[idx[x]] < a.order[idx[y]] })
	return idx
}

func (a *ccAssembly) finishStream() (Response, error) {
	if a.finish == "" {
		return Response{}, fmt.Errorf("%w: no finish reason before [DONE]", ErrStreamCut)
	}
	if err := a.completeCalls(); err != nil {
		return Response{}, err
	}
	msg := Message{Role: RoleAssistant, Text: a.text.String()}
	for _, index := range a.indexes() {
		msg.ToolCalls = append(msg.ToolCalls, *a.calls[index])
	}
	reason := ccFinishReason(a.finish)
	if reason == FinishStop && len(msg.ToolCalls) > 0 {
		reason = FinishToolCalls // some compatible servers say "stop" after tool calls
	}
	if err := a.emit(Event{Kind: EventFinish, FinishReason: reason}); err != nil {
		return Response{}, err
	}
	return Response{Message: msg, Usage: a.usage, FinishReason: reason, VendorFinishReason: a.finish}, nil
}

func ccFinishReason(r string) FinishReason {
	switch r {
	case "stop":
		return FinishStop
	case "tool_calls", "function_call":
		return FinishToolCalls
	case "length":
		return FinishLength
	case "content_filter":
		return FinishContentFilter
	}
	return FinishOther
}
