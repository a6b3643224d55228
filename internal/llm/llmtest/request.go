package llmtest

import (
	"encoding/json"
	"strings"
)

// Request is what the server received. Messages and Tools are as the
// vendor's protocol sends them; System and Conversation read them the same
// way for every protocol.
type Request struct {
	Model    string           `json:"model"`
	Messages []map[string]any `json:"messages"`
	Tools    []map[string]any `json:"tools"`
	// SystemParam is the top-level system parameter of a messages request
	// (a string or a list of text blocks); chat completions send the system
	// prompt as a message instead.
	SystemParam any `json:"system"`
	// Tokens is the request's length as the server counts it (see the
	// package's doc).
	Tokens int `json:"-"`
	// Refused is set when the server refused the request as longer than
	// its window.
	Refused bool `json:"-"`
	// Ended is set once the server is done answering: it wrote the whole
	// answer to the connection (whether or not the client read it yet), or
	// stopped because the client left.
	Ended bool `json:"-"`
}

// Message is a message of a request's conversation read the same way for
// every protocol: a tool result is a message of role "tool" (an Anthropic
// tool_result block of a user message becomes one).
type Message struct {
	Role       string // user, assistant or tool
	Text       string
	ToolCalls  []Call // an assistant's
	ToolCallID string // a tool result's
	IsError    bool   // a tool result's, when Anthropic's is_error says so
}

// System is the request's system prompt ("" when it has none).
func (r Request) System() string {
	if r.SystemParam != nil {
		return text(r.SystemParam)
	}
	for _, m := range r.Messages {
		if m["role"] == "system" {
			return text(m["content"])
		}
	}
	return ""
}

// Conversation is the request's messages but the system prompt, in order.
func (r Request) Conversation() []Message {
	var out []Message
	for _, m := range r.Messages {
		role, _ := m["role"].(string)
		switch role {
		case "system":
			continue
		case "tool":
			id, _ := m["tool_call_id"].(string)
			out = append(out, Message{Role: "tool", Text: text(m["content"]), ToolCallID: id})
			continue
		}
		msg := Message{Role: role}
		if blocks, ok := m["content"].([]any); ok {
			for _, b := range blocks {
				blk, _ := b.(map[string]any)
				switch blk["type"] {
				case "text":
					s, _ := blk["text"].(string)
					msg.Text += s
				case "tool_use":
					name, _ := blk["name"].(string)
					args, _ := json.Marshal(blk["input"])
					msg.ToolCalls = append(msg.ToolCalls, Call{Name: name, Arguments: string(args)})
				case "tool_result":
					id, _ := blk["tool_use_id"].(string)
					isErr, _ := blk["is_error"].(bool)
					out = append(out, Message{Role: "tool", Text: text(blk["content"]), ToolCallID: id, IsError: isErr})
				}
			}
		} else {
			msg.Text = text(m["content"])
		}
		calls, _ := m["tool_calls"].([]any)
		for _, c := range calls {
			fn, _ := c.(map[string]any)["function"].(map[string]any)
			name, _ := fn["name"].(string)
			args, _ := fn["arguments"].(string)
			msg.ToolCalls = append(msg.ToolCalls, Call{Name: name, Arguments: args})
		}
		if msg.Text != "" || len(msg.ToolCalls) > 0 {
			out = append(out, msg)
		}
	}
	return out
}

// ToolNames are the names of the tools the request offers.
func (r Request) ToolNames() []string {
	var out []string
	for _, t := range r.Tools {
		if fn, ok := t["function"].(map[string]any); ok {
			t = fn
		}
		name, _ := t["name"].(string)
		out = append(out, name)
	}
	return out
}

// text is a content's text: a string, or the text of its text blocks or
// parts, joined.
func text(content any) string {
	switch c := content.(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, p := range c {
			if part, ok := p.(map[string]any); ok && part["type"] == "text" {
				s, _ := part["text"].(string)
				b.WriteString(s)
			}
		}
		return b.String()
	}
	return ""
}
