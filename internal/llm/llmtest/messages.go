package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// NewMessagesServer starts a server playing script over Anthropic's
// messages protocol (POST URL + "/v1/messages", streamed); Close it when
// done.
//
// It refuses, with Anthropic's errors, what the API refuses of a
// conversation: a request without an x-api-key (or bearer token) or an
// anthropic-version header, without max_tokens or not streamed, with a
// message of no content or an empty text block, a tool_use block whose
// tool_result is not in the next message, or a tool_result whose tool_use
// is not in the previous one.
func NewMessagesServer(script []Turn, opts ...Option) *Server {
	return start(wire{path: "/v1/messages", check: checkMessages, tokens: messagesTokens, errorBody: messagesError, tooLong: messagesTooLong,
		stream: (*Server).streamMessages}, script, opts)
}

// messagesError is Anthropic's error body; the error's type follows the
// status as the API's do.
func messagesError(status int, message string) any {
	typ := "api_error"
	switch status {
	case http.StatusBadRequest:
		typ = "invalid_request_error"
	case http.StatusUnauthorized:
		typ = "authentication_error"
	case http.StatusForbidden:
		typ = "permission_error"
	case http.StatusNotFound:
		typ = "not_found_error"
	case http.StatusRequestEntityTooLarge:
		typ = "request_too_large"
	case http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case 529:
		typ = "overloaded_error"
	}
	return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": message}}
}

// messagesTooLong is Anthropic's refusal of a prompt longer than the
// model's context window.
func messagesTooLong(window, tokens int) any {
	return messagesError(http.StatusBadRequest, fmt.Sprintf("prompt is too long: %d tokens > %d maximum", tokens, window))
}

// messagesTokens counts a messages request as its conversation's chat
// completions body (see the package's doc).
func messagesTokens(_ []byte, req Request) int {
	var msgs []map[string]any
	if s := req.System(); s != "" {
		msgs = append(msgs, map[string]any{"role": "system", "content": s})
	}
	for _, m := range req.Conversation() {
		msg := map[string]any{"role": m.Role, "content": m.Text}
		if m.ToolCallID != "" {
			msg["tool_call_id"] = m.ToolCallID
		}
		var calls []any
		for _, c := range m.ToolCalls {
			calls = append(calls, map[string]any{"type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
		}
		if len(calls) > 0 {
			msg["tool_calls"] = calls
		}
		msgs = append(msgs, msg)
	}
	body := map[string]any{"model": req.Model, "stream": true, "messages": msgs}
	var tools []any
	for _, t := range req.Tools {
		tools = append(tools, map[string]any{"type": "function", "function": map[string]any{
			"name": t["name"], "description": t["description"], "parameters": t["input_schema"]}})
	}
	if len(tools) > 0 {
		body["tools"] = tools
	}
	b, _ := json.Marshal(body)
	return tokens(b)
}

func checkMessages(r *http.Request, body []byte, req Request) (int, string) {
	if r.Header.Get("x-api-key") == "" && !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		return http.StatusUnauthorized, "x-api-key header is required"
	}
	if r.Header.Get("anthropic-version") == "" {
		return http.StatusBadRequest, "anthropic-version: header is required"
	}
	var params struct {
		MaxTokens *int `json:"max_tokens"`
		Stream    bool `json:"stream"`
	}
	_ = json.Unmarshal(body, &params) // it decoded into req already
	if params.MaxTokens == nil {
		return http.StatusBadRequest, "max_tokens: Field required"
	}
	if !params.Stream {
		return http.StatusBadRequest, "stream: the scripted server answers streamed requests only"
	}
	if len(req.Messages) == 0 {
		return http.StatusBadRequest, "messages: at least one message is required"
	}
	var open []string // tool_use ids of the previous message
	for i, m := range req.Messages {
		role, _ := m["role"].(string)
		if role != "user" && role != "assistant" {
			return http.StatusBadRequest, fmt.Sprintf("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		blocks, isList := m["content"].([]any)
		if s, ok := m["content"].(string); ok && s != "" {
			blocks, isList = []any{map[string]any{"type": "text", "text": s}}, true
		}
		if !isList || len(blocks) == 0 {
			if role == "assistant" && i == len(req.Messages)-1 {
				continue
			}
			return http.StatusBadRequest, fmt.Sprintf("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
		}
		answered := map[string]bool{}
		var uses []string
		for j, b := range blocks {
			blk, _ := b.(map[string]any)
			switch blk["type"] {
			case "text":
				if s, _ := blk["text"].(string); s == "" {
					return http.StatusBadRequest, "messages: text content blocks must be non-empty"
				}
			case "tool_use":
				id, _ := blk["id"].(string)
				uses = append(uses, id)
			case "tool_result":
				id, _ := blk["tool_use_id"].(string)
				if role != "user" || !slices.Contains(open, id) {
					return http.StatusBadRequest, fmt.Sprintf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. "+
						"Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, id)
				}
				answered[id] = true
			}
		}
		for _, id := range open {
			if !answered[id] {
				return http.StatusBadRequest, fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. "+
					"Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i-1, id)
			}
		}
		open = uses
	}
	if len(open) > 0 {
		return http.StatusBadRequest, fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. "+
			"Each `tool_use` block must have a corresponding `tool_result` block in the next message.", len(req.Messages)-1, open[0])
	}
	return 0, ""
}

// streamMessages streams turn as Anthropic's events: message_start, a
// text block when the turn has text (or nothing else), a tool_use block
// per call with its input in pieces, message_delta with the stop reason and
// message_stop, with a ping after the start as the API sends.
func (s *Server) streamMessages(w http.ResponseWriter, r *http.Request, req Request, n int, turn Turn) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	send := func(v map[string]any) bool {
		b, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", v["type"], b); err != nil {
			return false
		}
		fl.Flush()
		return true
	}
	if !send(map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_test_%d", n), "type": "message", "role": "assistant", "content": []any{}, "model": req.Model,
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": s.prompt(req), "output_tokens": 1}}}) ||
		!send(map[string]any{"type": "ping"}) {
		return
	}
	index := 0
	if turn.Text != "" || (turn.Flood > 0 && !turn.FloodArguments) || len(turn.ToolCalls) == 0 && turn.Flood == 0 {
		if !send(blockStart(index, map[string]any{"type": "text", "text": ""})) {
			return
		}
		for _, piece := range split(turn.Text, max(turn.Chunks, 1)) {
			if !pause(r, turn.ChunkDelay) || !send(blockDelta(index, map[string]any{"type": "text_delta", "text": piece})) {
				return
			}
		}
		if turn.Flood > 0 && !turn.FloodArguments {
			s.floodMessages(r, turn, index, send)
			return
		}
		if !send(map[string]any{"type": "content_block_stop", "index": index}) {
			return
		}
		index++
	}
	if turn.Flood > 0 {
		s.floodMessages(r, turn, index, send)
		return
	}
	for i, c := range turn.ToolCalls {
		if !send(blockStart(index, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%02d_%d", n, i), "name": c.Name, "input": map[string]any{}})) ||
			!send(blockDelta(index, map[string]any{"type": "input_json_delta", "partial_json": ""})) {
			return
		}
		for _, piece := range split(c.Arguments, 3) {
			if !send(blockDelta(index, map[string]any{"type": "input_json_delta", "partial_json": piece})) {
				return
			}
		}
		if !send(map[string]any{"type": "content_block_stop", "index": index}) {
			return
		}
		index++
	}
	stop := "end_turn"
	if len(turn.ToolCalls) > 0 {
		stop = "tool_use"
	}
	if send(map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 5}}) {
		send(map[string]any{"type": "message_stop"})
	}
}

func blockStart(index int, block map[string]any) map[string]any {
	return map[string]any{"type": "content_block_start", "index": index, "content_block": block}
}

func blockDelta(index int, delta map[string]any) map[string]any {
	return map[string]any{"type": "content_block_delta", "index": index, "delta": delta}
}

// floodMessages streams turn.Flood bytes in 32 KiB deltas of the open text
// block index or, with FloodArguments, of a tool_use block it starts there
// (see Turn.Flood).
func (s *Server) floodMessages(r *http.Request, turn Turn, index int, send func(map[string]any) bool) {
	piece := strings.Repeat("x", 32<<10)
	delta := map[string]any{"type": "text_delta", "text": piece}
	if turn.FloodArguments {
		if !send(blockStart(index, map[string]any{"type": "tool_use", "id": "toolu_flood", "name": "lookup", "input": map[string]any{}})) {
			return
		}
		delta = map[string]any{"type": "input_json_delta", "partial_json": piece}
	}
	for sent := int64(0); sent < turn.Flood && r.Context().Err() == nil; sent += int64(len(piece)) {
		if !send(blockDelta(index, delta)) {
			return
		}
		s.flooded.Add(int64(len(piece)))
	}
}
