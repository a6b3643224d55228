// Package llm holds the model adapters the agent loop calls: one vendor-neutral
// Request and event stream, and an adapter per model API family (OpenAI chat
// completions and responses, Anthropic messages, Gemini generateContent,
// Bedrock converse, Cohere chat). Adapters stream, assemble tool calls, retry
// 429 and 5xx answers before anything was streamed, and send every request
// through the *http.Client they are given (the endpoint policy's guarded
// client in production). ForProvider builds the adapter of a provider from its
// type, config and credential. Decisions 0025 and 0028.
package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Model is one model API family speaking to one vendor endpoint.
type Model interface {
	// Stream sends req, calls fn for every event as it arrives and returns the
	// assembled answer once the vendor ends the stream. An error from fn stops
	// the stream and is returned unchanged (wrapped). Nothing is retried once
	// fn has been called.
	Stream(ctx context.Context, req Request, fn func(Event) error) (Response, error)
}

// Role is the author of a message.
type Role string

// The roles of a conversation. System instructions are Request.System, not a
// message.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one turn of the conversation.
type Message struct {
	Role Role
	// Text is the message's text. For a tool message it is the tool's result.
	Text string
	// ToolCalls are the calls an assistant message asked for.
	ToolCalls []ToolCall
	// ToolCallID names the call a tool message answers.
	ToolCallID string
	// IsError marks a tool result that reports a failure (Anthropic sends it as
	// is_error; chat completions has no such field and sends the text alone).
	IsError bool
	// Reasoning is the model's reasoning an assistant message carries back to
	// the vendor (Anthropic's signed thinking blocks, which the API wants
	// again with tool results when extended thinking is on). It is not
	// streamed as events.
	Reasoning []Reasoning `json:",omitempty"`
}

// Reasoning is one reasoning block of an assistant message.
type Reasoning struct {
	// Text is the reasoning text, or the vendor's opaque data when Redacted.
	Text string
	// Signature is the vendor's proof the text is its own.
	Signature string `json:",omitempty"`
	// Redacted marks reasoning the vendor encrypted (redacted_thinking).
	Redacted bool `json:",omitempty"`
}

// ToolCall is a model's request to run a tool.
type ToolCall struct {
	ID   string
	Name string
	// Arguments is the JSON text of the arguments object, as the model wrote it.
	Arguments string
	// Signature is vendor data that must travel back with the call in the
	// next request (Gemini's thoughtSignature); empty for most vendors.
	Signature string `json:",omitempty"`
}

// Tool is a tool the model may call.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments object; empty means an
	// object without properties.
	Parameters json.RawMessage
}

// Request is one call of a model.
type Request struct {
	// Model is the vendor's model name (or Azure deployment).
	Model string
	// System is the system instructions; empty sends none.
	System   string
	Messages []Message
	Tools    []Tool
	// MaxOutputTokens bounds the answer; 0 leaves the vendor's default where
	// the API allows it (Anthropic requires a value: DefaultMaxOutputTokens).
	MaxOutputTokens int
	// Temperature is sent when set.
	Temperature *float64
	// MaxOutputBytes bounds what the answer carries: its text, its
	// reasoning and its tool calls together; 0 is DefaultMaxOutputBytes.
	// The effective max output tokens lower it to that many times
	// BytesPerToken. An answer that reaches a bound ends the call with an
	// *OutputLimitError.
	MaxOutputBytes int
	// MaxToolArgumentBytes bounds one tool call's arguments; 0 is
	// DefaultMaxToolArgumentBytes.
	MaxToolArgumentBytes int
	// Settings is the model's settings object for its API, as the provider
	// type's settings schema declares them (temperature, top_p, seed, stop,
	// reasoning_effort...); each adapter maps the members its API knows onto
	// its wire names. MaxOutputTokens and Temperature, when set, win over the
	// settings' max_output_tokens and temperature. Empty sends none.
	Settings json.RawMessage
}

// DefaultMaxOutputTokens is sent to APIs that require a bound when the request
// has none.
const DefaultMaxOutputTokens = 4096

// Validate checks the request's shape before anything is sent.
func (r Request) Validate() error {
	if r.Model == "" {
		return errors.New("llm: request has no model")
	}
	if len(r.Messages) == 0 {
		return errors.New("llm: request has no messages")
	}
	if r.MaxOutputTokens < 0 {
		return errors.New("llm: max output tokens is negative")
	}
	if r.MaxOutputBytes < 0 || r.MaxToolArgumentBytes < 0 {
		return errors.New("llm: an output byte bound is negative")
	}
	for i, m := range r.Messages {
		if err := m.validate(); err != nil {
			return fmt.Errorf("llm: message %d: %w", i, err)
		}
	}
	if _, err := parseSettings(r.Settings); err != nil {
		return fmt.Errorf("llm: %w", err)
	}
	for i, t := range r.Tools {
		if t.Name == "" {
			return fmt.Errorf("llm: tool %d has no name", i)
		}
		if len(t.Parameters) > 0 && !json.Valid(t.Parameters) {
			return fmt.Errorf("llm: tool %q: parameters are not valid JSON", t.Name)
		}
	}
	return nil
}

func (m Message) validate() error {
	switch m.Role {
	case RoleUser:
		if len(m.ToolCalls) > 0 || m.ToolCallID != "" {
			return errors.New("user message carries tool fields")
		}
	case RoleAssistant:
		for _, c := range m.ToolCalls {
			if c.ID == "" || c.Name == "" {
				return errors.New("tool call without id or name")
			}
			if c.Arguments != "" && !json.Valid([]byte(c.Arguments)) {
				return fmt.Errorf("tool call %q: arguments are not valid JSON", c.ID)
			}
		}
	case RoleTool:
		if m.ToolCallID == "" {
			return errors.New("tool message has no tool call id")
		}
	default:
		return fmt.Errorf("unknown role %q", m.Role)
	}
	return nil
}

// EventKind says what an Event carries.
type EventKind int

// The event kinds, in the order a stream can produce them: text and tool call
// events interleave as the model writes; Usage and Finish come last.
const (
	// EventTextDelta carries Text, the next piece of the answer.
	EventTextDelta EventKind = iota + 1
	// EventToolCallStart carries ToolIndex, ToolCall.ID and ToolCall.Name.
	EventToolCallStart
	// EventToolCallDelta carries ToolIndex and Text, the next piece of the
	// arguments' JSON.
	EventToolCallDelta
	// EventToolCallDone carries ToolIndex and the complete ToolCall.
	EventToolCallDone
	// EventUsage carries Usage, the tokens counted so far.
	EventUsage
	// EventFinish carries FinishReason; it is the last event.
	EventFinish
)

// String names the kind for logs and test failures.
func (k EventKind) String() string {
	switch k {
	case EventTextDelta:
		return "text_delta"
	case EventToolCallStart:
		return "tool_call_start"
	case EventToolCallDelta:
		return "tool_call_delta"
	case EventToolCallDone:
		return "tool_call_done"
	case EventUsage:
		return "usage"
	case EventFinish:
		return "finish"
	}
	return fmt.Sprintf("event_kind(%d)", int(k))
}

// Event is one streamed piece of an answer; Kind says which fields are set.
type Event struct {
	Kind EventKind
	Text string
	// ToolIndex is the call's position among the message's tool calls (0, 1, ...).
	ToolIndex    int
	ToolCall     ToolCall
	Usage        Usage
	FinishReason FinishReason
}

// Usage counts tokens.
type Usage struct {
	InputTokens  int
	OutputTokens int
}

// FinishReason is why the model stopped, normalised across vendors.
type FinishReason string

// The finish reasons.
const (
	FinishStop          FinishReason = "stop"           // a natural end or a stop sequence
	FinishToolCalls     FinishReason = "tool_calls"     // the model waits for tool results
	FinishLength        FinishReason = "length"         // the output token bound was reached
	FinishContentFilter FinishReason = "content_filter" // the vendor refused or filtered
	FinishOther         FinishReason = "other"          // anything else (VendorFinishReason has it)
)

// Response is the assembled answer of one call.
type Response struct {
	// Message is the assistant message: its text and tool calls.
	Message      Message
	Usage        Usage
	FinishReason FinishReason
	// VendorFinishReason is the vendor's own word (end_turn, tool_use, stop...).
	VendorFinishReason string
	// Attempts is how many HTTP requests the call took (1 without retries).
	Attempts int
}
