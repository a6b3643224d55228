package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// APIResponses names the OpenAI responses family in errors.
const APIResponses = "responses"

// Responses is the OpenAI responses adapter (POST {base_url}/responses,
// streamed). Requests are stateless: store is false and the whole
// conversation is sent as input items each time.
type Responses struct {
	endpoint Endpoint
}

// NewResponses returns the adapter for ep (Authorization Bearer by default).
func NewResponses(ep Endpoint) *Responses {
	if ep.AuthHeader == "" {
		ep.AuthHeader, ep.AuthPrefix = "Authorization", "Bearer "
	}
	return &Responses{endpoint: ep}
}

var _ Model = (*Responses)(nil)

// Stream implements Model.
func (r *Responses) Stream(ctx context.Context, req Request, fn func(Event) error) (Response, error) {
	if err := req.Validate(); err != nil {
		return Response{}, err
	}
	body, err := json.Marshal(responsesBody(req))
	if err != nil {
		return Response{}, fmt.Errorf("llm: encoding the responses request: %w", err)
	}
	return call{
		api: APIResponses, url: strings.TrimSuffix(r.endpoint.BaseURL, "/") + "/responses", body: body,
		authHeader: r.endpoint.AuthHeader, authPrefix: r.endpoint.AuthPrefix,
		decode: decodeResponses, endpointCfg: r.endpoint, limits: req.outputLimits(),
	}.run(ctx, fn)
}

// rsItem is an input item: a message, a function call or a call's output.
type rsItem struct {
	Type      string  `json:"type"`
	Role      string  `json:"role,omitempty"`
	Content   string  `json:"content,omitempty"`
	CallID    string  `json:"call_id,omitempty"`
	Name      string  `json:"name,omitempty"`
	Arguments string  `json:"arguments,omitempty"`
	Output    *string `json:"output,omitempty"`
}

type rsTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
}

func responsesBody(req Request) map[string]any {
	var input []rsItem
	for _, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			input = append(input, rsItem{Type: "message", Role: "user", Content: m.Text})
		case RoleAssistant:
			if m.Text != "" {
				input = append(input, rsItem{Type: "message", Role: "assistant", Content: m.Text})
			}
			for _, tc := range m.ToolCalls {
				args := tc.Arguments
				if args == "" {
					args = "{}"
				}
				input = append(input, rsItem{Type: "function_call", CallID: tc.ID, Name: tc.Name, Arguments: args})
			}
		case RoleTool:
			out := m.Text
			input = append(input, rsItem{Type: "function_call_output", CallID: m.ToolCallID, Output: &out})
		}
	}
	b := map[string]any{"model": req.Model, "input": input, "stream": true, "store": false}
	if req.System != "" {
		b["instructions"] = req.System
	}
	if len(req.Tools) > 0 {
		tools := make([]rsTool, len(req.Tools))
		for i, t := range req.Tools {
			params := t.Parameters
			if len(params) == 0 {
				params = emptyObjectSchema
			}
			// strict mode needs schemas shaped for it; tools come from anywhere.
			tools[i] = rsTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: params}
		}
		b["tools"] = tools
	}
	s := req.effective()
	put(b, "max_output_tokens", s.MaxOutputTokens)
	put(b, "temperature", s.Temperature)
	put(b, "top_p", s.TopP)
	putString(b, "truncation", s.Truncation)
	putString(b, "service_tier", s.ServiceTier)
	if len(req.Tools) > 0 {
		put(b, "parallel_tool_calls", s.ParallelToolCalls)
	}
	reasoning := map[string]any{}
	putString(reasoning, "effort", s.ReasoningEffort)
	putString(reasoning, "summary", s.ReasoningSummary)
	if len(reasoning) > 0 {
		b["reasoning"] = reasoning
	}
	if s.TextVerbosity != "" {
		b["text"] = map[string]any{"verbosity": s.TextVerbosity}
	}
	return b
}

// rsEvent is any streamed event; Type says which members are set.
type rsEvent struct {
	Type        string `json:"type"`
	OutputIndex int    `json:"output_index"`
	ItemID      string `json:"item_id"`
	Delta       string `json:"delta"`
	Arguments   string `json:"arguments"`
	Item        struct {
		Type      string `json:"type"`
		ID        string `json:"id"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"item"`
	Response struct {
		Status            string `json:"status"`
		IncompleteDetails *struct {
			Reason string `json:"reason"`
		} `json:"incomplete_details"`
		Usage *struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	} `json:"response"`
	// The error event's members.
	Code    string `json:"code"`
	Message string `json:"message"`
}

// rsAssembly accumulates a streamed response.
type rsAssembly struct {
	emit  func(Event) error
	text  strings.Builder
	calls []ToolCall
	args  pieces      // by tool call index
	items map[int]int // output_index -> tool call index, for function_call items
	outs  []int       // tool call index -> output_index
	done  map[int]bool
	usage Usage
}

func decodeResponses(_ context.Context, body io.Reader, maxEvent int, emit func(Event) error) (Response, error) {
	a := &rsAssembly{emit: emit, items: map[int]int{}, done: map[int]bool{}}
	sse := newSSEReader(body, maxEvent)
	for {
		ev, err := sse.next()
		if errors.Is(err, io.EOF) {
			return Response{}, ErrStreamCut
		}
		if err != nil {
			return Response{}, err
		}
		var e rsEvent
		if err := json.Unmarshal([]byte(ev.data), &e); err != nil {
			return Response{}, fmt.Errorf("decoding a %q event: %w", ev.event, err)
		}
		switch e.Type {
		case "response.completed", "response.incomplete":
			return a.end(e)
		case "response.failed":
			msg, typ := "the response failed", ""
			if e.Response.Error != nil {
				msg, typ = e.Response.Error.Message, e.Response.Error.Code
			}
			return Response{}, &Error{API: APIResponses, Type: typ, Message: msg, Retryable: typ == "server_error" || typ == "rate_limit_exceeded"}
		case "error":
			return Response{}, &Error{API: APIResponses, Type: e.Code, Message: e.Message, Retryable: e.Code == "server_error" || e.Code == "rate_limit_exceeded"}
		}
		if err := a.event(e); err != nil {
			return Response{}, err
		}
	}
}

func (a *rsAssembly) event(e rsEvent) error {
	switch e.Type {
	case "response.output_text.delta":
		if e.Delta == "" {
			return nil
		}
		a.text.WriteString(e.Delta)
		return a.emit(Event{Kind: EventTextDelta, Text: e.Delta})
	case "response.output_item.added":
		if e.Item.Type != "function_call" {
			return nil // messages, reasoning: their text arrives as deltas
		}
		if e.Item.CallID == "" || e.Item.Name == "" {
			return &Error{API: APIResponses, Message: "the model streamed a function call without call_id or name"}
		}
		i := len(a.calls)
		a.items[e.OutputIndex] = i
		a.outs = append(a.outs, e.OutputIndex)
		a.calls = append(a.calls, ToolCall{ID: e.Item.CallID, Name: e.Item.Name})
		if err := a.emit(Event{Kind: EventToolCallStart, ToolIndex: i, ToolCall: a.calls[i]}); err != nil {
			return err
		}
		if e.Item.Arguments != "" {
			a.args.set(i, e.Item.Arguments)
			return a.emit(Event{Kind: EventToolCallDelta, ToolIndex: i, Text: e.Item.Arguments})
		}
	case "response.function_call_arguments.delta":
		i, ok := a.items[e.OutputIndex]
		if !ok {
			return fmt.Errorf("arguments for output item %d, which is no function call", e.OutputIndex)
		}
		if e.Delta == "" {
			return nil
		}
		a.args.add(i, e.Delta)
		return a.emit(Event{Kind: EventToolCallDelta, ToolIndex: i, Text: e.Delta})
	case "response.function_call_arguments.done":
		if i, ok := a.items[e.OutputIndex]; ok && e.Arguments != "" {
			a.args.set(i, e.Arguments) // the complete text wins over the pieces
		}
	case "response.output_item.done":
		return a.complete(e.OutputIndex)
	}
	// created, in_progress, content_part, reasoning summaries and later types are ignored.
	return nil
}

// complete emits the done event of a function call item, once.
func (a *rsAssembly) complete(outputIndex int) error {
	i, ok := a.items[outputIndex]
	if !ok || a.done[outputIndex] {
		return nil
	}
	a.done[outputIndex] = true
	a.calls[i].Arguments = a.args.text(i)
	if a.calls[i].Arguments == "" {
		a.calls[i].Arguments = "{}"
	}
	return a.emit(Event{Kind: EventToolCallDone, ToolIndex: i, ToolCall: a.calls[i]})
}

func (a *rsAssembly) end(e rsEvent) (Response, error) {
	for _, idx := range a.outs {
		if err := a.complete(idx); err != nil {
			return Response{}, err
		}
	}
	if u := e.Response.Usage; u != nil {
		a.usage = Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens}
		if err := a.emit(Event{Kind: EventUsage, Usage: a.usage}); err != nil {
			return Response{}, err
		}
	}
	vendor := e.Response.Status
	reason := FinishStop
	switch {
	case e.Type == "response.incomplete":
		vendor = "incomplete"
		if d := e.Response.IncompleteDetails; d != nil && d.Reason != "" {
			vendor = d.Reason
		}
		switch vendor {
		case "max_output_tokens":
			reason = FinishLength
		case "content_filter":
			reason = FinishContentFilter
		default:
			reason = FinishOther
		}
	case len(a.calls) > 0:
		reason = FinishToolCalls
	}
	if err := a.emit(Event{Kind: EventFinish, FinishReason: reason}); err != nil {
		return Response{}, err
	}
	msg := Message{Role: RoleAssistant, Text: a.text.String(), ToolCalls: a.calls}
	return Response{Message: msg, Usage: a.usage, FinishReason: reason, VendorFinishReason: vendor}, nil
}
