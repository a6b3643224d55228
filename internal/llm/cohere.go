package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// APICohereChat names the Cohere v2 chat family in errors.
const APICohereChat = "chat"

// CohereChat is the Cohere v2 chat adapter (POST {base_url}/v2/chat with
// stream: true, a bearer key). BaseURL is the cohere type's base_url
// (https://api.cohere.com).
type CohereChat struct {
	endpoint Endpoint
}

// NewCohereChat returns the adapter for ep.
func NewCohereChat(ep Endpoint) *CohereChat {
	if ep.AuthHeader == "" {
		ep.AuthHeader, ep.AuthPrefix = "Authorization", "Bearer "
	}
	return &CohereChat{endpoint: ep}
}

var _ Model = (*CohereChat)(nil)

// Stream implements Model.
func (c *CohereChat) Stream(ctx context.Context, req Request, fn func(Event) error) (Response, error) {
	if err := req.Validate(); err != nil {
		return Response{}, err
	}
	body, err := json.Marshal(cohereBody(req))
	if err != nil {
		return Response{}, fmt.Errorf("llm: encoding the cohere chat request: %w", err)
	}
	return call{
		api: APICohereChat, url: strings.TrimSuffix(c.endpoint.BaseURL, "/") + "/v2/chat", body: body,
		authHeader: c.endpoint.AuthHeader, authPrefix: c.endpoint.AuthPrefix,
		decode: decodeCohere, endpointCfg: c.endpoint, limits: req.outputLimits(),
	}.run(ctx, fn)
}

type coMessage struct {
	Role       string       `json:"role"`
	Content    string       `json:"content,omitempty"`
	ToolPlan   string       `json:"tool_plan,omitempty"`
	ToolCalls  []ccToolCall `json:"tool_calls,omitempty"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
}

func cohereBody(req Request) map[string]any {
	msgs := make([]coMessage, 0, len(req.Messages)+1)
	if req.System != "" {
		msgs = append(msgs, coMessage{Role: "system", Content: req.System})
	}
	for _, m := range req.Messages {
		out := coMessage{Role: string(m.Role), Content: m.Text}
		switch m.Role {
		case RoleAssistant:
			if len(m.ToolCalls) > 0 {
				// The text before tool calls is the model's tool plan.
				out.Content, out.ToolPlan = "", m.Text
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
			if m.IsError {
				out.Content = "Error: " + m.Text
			}
		}
		msgs = append(msgs, out)
	}
	b := map[string]any{"model": req.Model, "messages": msgs, "stream": true}
	if len(req.Tools) > 0 {
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
	s := req.effective()
	put(b, "max_tokens", s.MaxOutputTokens)
	put(b, "temperature", s.Temperature)
	put(b, "p", s.TopP)
	put(b, "k", s.TopK)
	put(b, "frequency_penalty", s.FrequencyPenalty)
	put(b, "presence_penalty", s.PresencePenalty)
	put(b, "seed", s.Seed)
	if stop := s.stops(); len(stop) > 0 {
		b["stop_sequences"] = stop
	}
	putString(b, "safety_mode", s.SafetyMode)
	return b
}

// coEvent is any streamed event; Type says which members are set.
type coEvent struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
	Delta struct {
		Message struct {
			// content and tool_calls are arrays in message-start and
			// objects in the deltas: decoded by the events that use them.
			Content   json.RawMessage `json:"content"`
			ToolPlan  string          `json:"tool_plan"`
			ToolCalls json.RawMessage `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
		Error        string `json:"error"`
		Usage        *struct {
			BilledUnits struct {
				InputTokens  float64 `json:"input_tokens"`
				OutputTokens float64 `json:"output_tokens"`
			} `json:"billed_units"`
			Tokens *struct {
				InputTokens  float64 `json:"input_tokens"`
				OutputTokens float64 `json:"output_tokens"`
			} `json:"tokens"`
		} `json:"usage"`
	} `json:"delta"`
}

// coToolCall is the tool call of tool-call-start and tool-call-delta events.
type coToolCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// coAssembly accumulates a streamed answer.
type coAssembly struct {
	emit  func(Event) error
	text  strings.Builder
	calls []ToolCall
	args  pieces      // by ToolIndex
	index map[int]int // Cohere's tool call index -> ToolIndex
	open  map[int]bool
	usage Usage
}

func decodeCohere(_ context.Context, body io.Reader, maxEvent int, emit func(Event) error) (Response, error) {
	a := &coAssembly{emit: emit, index: map[int]int{}, open: map[int]bool{}}
	sse := newSSEReader(body, maxEvent)
	for {
		ev, err := sse.next()
		if errors.Is(err, io.EOF) {
			return Response{}, ErrStreamCut
		}
		if err != nil {
			return Response{}, err
		}
		var e coEvent
		if err := json.Unmarshal([]byte(ev.data), &e); err != nil {
			return Response{}, fmt.Errorf("decoding a %q event: %w", ev.event, err)
		}
		if e.Type == "" {
			e.Type = ev.event
		}
		if e.Type == "message-end" {
			return a.end(e)
		}
		if err := a.event(e); err != nil {
			return Response{}, err
		}
	}
}

func (a *coAssembly) event(e coEvent) error {
	m := e.Delta.Message
	switch e.Type {
	case "content-delta":
		var c struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(m.Content, &c); err != nil {
			return fmt.Errorf("decoding a content-delta: %w", err)
		}
		if c.Text != "" {
			return a.textDelta(c.Text)
		}
	case "tool-plan-delta":
		if m.ToolPlan != "" {
			return a.textDelta(m.ToolPlan)
		}
	case "tool-call-start":
		var tc coToolCall
		if err := json.Unmarshal(m.ToolCalls, &tc); err != nil {
			return fmt.Errorf("decoding a tool-call-start: %w", err)
		}
		if tc.ID == "" || tc.Function.Name == "" {
			return &Error{API: APICohereChat, Message: "the model streamed a tool call without id or name"}
		}
		i := len(a.calls)
		a.index[e.Index], a.open[e.Index] = i, true
		a.calls = append(a.calls, ToolCall{ID: tc.ID, Name: tc.Function.Name})
		if err := a.emit(Event{Kind: EventToolCallStart, ToolIndex: i, ToolCall: a.calls[i]}); err != nil {
			return err
		}
		return a.argsDelta(i, tc.Function.Arguments)
	case "tool-call-delta":
		i, ok := a.index[e.Index]
		var tc coToolCall
		if !ok || !a.open[e.Index] || json.Unmarshal(m.ToolCalls, &tc) != nil {
			return fmt.Errorf("tool-call-delta for call %d, which is not open", e.Index)
		}
		return a.argsDelta(i, tc.Function.Arguments)
	case "tool-call-end":
		i, ok := a.index[e.Index]
		if !ok || !a.open[e.Index] {
			return fmt.Errorf("tool-call-end for call %d, which is not open", e.Index)
		}
		a.open[e.Index] = false
		a.calls[i].Arguments = a.args.text(i)
		if a.calls[i].Arguments == "" {
			a.calls[i].Arguments = "{}"
		}
		return a.emit(Event{Kind: EventToolCallDone, ToolIndex: i, ToolCall: a.calls[i]})
	}
	// message-start, content-start/end, citations and later types carry nothing we use.
	return nil
}

func (a *coAssembly) textDelta(s string) error {
	a.text.WriteString(s)
	return a.emit(Event{Kind: EventTextDelta, Text: s})
}

func (a *coAssembly) argsDelta(i int, s string) error {
	if s == "" {
		return nil
	}
	a.args.add(i, s)
	return a.emit(Event{Kind: EventToolCallDelta, ToolIndex: i, Text: s})
}

func (a *coAssembly) end(e coEvent) (Response, error) {
	reason := e.Delta.FinishReason
	if reason == "" {
		return Response{}, fmt.Errorf("%w: no finish_reason in message-end", ErrStreamCut)
	}
	if reason == "ERROR" && a.text.Len() == 0 && len(a.calls) == 0 {
		return Response{}, &Error{API: APICohereChat, Type: "ERROR", Message: e.Delta.Error, Retryable: true}
	}
	if u := e.Delta.Usage; u != nil {
		// tokens counts the whole prompt (with Cohere's own template);
		// billed_units only what is billed. Prefer the former, as for the
		// other families.
		a.usage = Usage{InputTokens: int(u.BilledUnits.InputTokens), OutputTokens: int(u.BilledUnits.OutputTokens)}
		if u.Tokens != nil {
			a.usage = Usage{InputTokens: int(u.Tokens.InputTokens), OutputTokens: int(u.Tokens.OutputTokens)}
		}
		if err := a.emit(Event{Kind: EventUsage, Usage: a.usage}); err != nil {
			return Response{}, err
		}
	}
	for idx, open := range a.open {
		if open {
			return Response{}, fmt.Errorf("%w: tool call %d was not ended", ErrStreamCut, idx)
		}
	}
	fr := coFinishReason(reason)
	if fr == FinishStop && len(a.calls) > 0 {
		fr = FinishToolCalls
	}
	if err := a.emit(Event{Kind: EventFinish, FinishReason: fr}); err != nil {
		return Response{}, err
	}
	msg := Message{Role: RoleAssistant, Text: a.text.String(), ToolCalls: a.calls}
	return Response{Message: msg, Usage: a.usage, FinishReason: fr, VendorFinishReason: reason}, nil
}

func coFinishReason(r string) FinishReason {
	switch r {
	case "COMPLETE", "STOP_SEQUENCE":
		return FinishStop
	case "TOOL_CALL":
		return FinishToolCalls
	case "MAX_TOKENS":
		return FinishLength
	}
	return FinishOther
}
