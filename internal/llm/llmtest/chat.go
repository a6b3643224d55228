// Package llmtest serves scripted conversations over the OpenAI chat
// completions wire protocol (streamed, server-sent events flushed per
// chunk), for tests of what calls models: the worker, the API, the binary.
//
// A script is a list of turns. The turn a request gets is chosen by the
// conversation it sends, not by the order of requests: the number of
// assistant messages in it. So a request repeated after a crash (the same
// conversation) gets the same turn again, as a real model would answer the
// same question again.
//
// A server made with Window refuses a request longer than its context
// window as OpenAI does (HTTP 400, code context_length_exceeded), counting
// a request's tokens as its body's bytes over four, and reports that count
// as the usage's prompt tokens.
package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Turn is one answer of the model.
type Turn struct {
	// Text is streamed in Chunks pieces (at least 1), ChunkDelay apart.
	Text       string
	Chunks     int
	ChunkDelay time.Duration
	// ToolCalls are asked for after the text.
	ToolCalls []Call
	// Status, when not 0 or 200, is answered instead (with an OpenAI error body).
	Status int
	// Flood, when set, streams that many bytes after Text, 32 KiB a chunk,
	// as text or, with FloodArguments, as the arguments of one tool call
	// that never ends, and then drops the connection without finishing the
	// answer: a vendor that ignores every bound. It stops early when the
	// client leaves; FloodSent counts what it wrote.
	Flood          int64
	FloodArguments bool
}

// Call is a tool call the model asks for.
type Call struct {
	Name      string
	Arguments string
}

// Request is what the server received.
type Request struct {
	Model    string           `json:"model"`
	Messages []map[string]any `json:"messages"`
	Tools    []map[string]any `json:"tools"`
	// Tokens is the request's length as the server counts it (its body's
	// bytes over four).
	Tokens int `json:"-"`
	// Refused is set when the server refused the request as longer than
	// its window.
	Refused bool `json:"-"`
}

// System is the request's system message ("" when it has none).
func (r Request) System() string {
	for _, m := range r.Messages {
		if m["role"] == "system" {
			s, _ := m["content"].(string)
			return s
		}
	}
	return ""
}

// ChatServer is a scripted chat completions endpoint at URL (the base URL:
// requests go to URL + "/chat/completions").
type ChatServer struct {
	*httptest.Server
	script []Turn
	window int
	cycle  bool

	mu       sync.Mutex
	requests []Request
	flooded  atomic.Int64
}

// Option changes how a server answers.
type Option func(*ChatServer)

// Window makes the server refuse, as OpenAI does, a request longer than
// tokens (its body's bytes over four), and report a request's length as
// its prompt tokens.
func Window(tokens int) Option { return func(s *ChatServer) { s.window = tokens } }

// Cycle makes the server answer a conversation with n assistant messages
// with turn n modulo the script's length, so a script never runs out: for
// long threads, whose conversation a client may shorten.
func Cycle() Option { return func(s *ChatServer) { s.cycle = true } }

// FloodSent is the bytes of flood chunks written so far (see Turn.Flood).
func (s *ChatServer) FloodSent() int64 { return s.flooded.Load() }

// NewChatServer starts a server playing script; Close it when done.
func NewChatServer(script []Turn, opts ...Option) *ChatServer {
	s := &ChatServer{script: script}
	for _, o := range opts {
		o(s)
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// tokens counts a request body as the server does.
func tokens(body []byte) int { return (len(body) + 3) / 4 }

// Requests returns the requests received so far.
func (s *ChatServer) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *ChatServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.Error(w, `{"error":{"message":"not found","type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(r.Body)
	var req Request
	if err == nil {
		err = json.NewDecoder(bytes.NewReader(body)).Decode(&req)
	}
	if err != nil {
		http.Error(w, `{"error":{"message":"bad json","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	req.Tokens = tokens(body)
	req.Refused = s.window > 0 && req.Tokens > s.window
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	if req.Refused {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		b, _ := json.Marshal(map[string]any{"error": map[string]any{
			"message": fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", s.window, req.Tokens),
			"type":    "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
		_, _ = w.Write(b)
		return
	}
	n := 0
	for _, m := range req.Messages {
		if m["role"] == "assistant" {
			n++
		}
	}
	if s.cycle && len(s.script) > 0 {
		n %= len(s.script)
	}
	if n >= len(s.script) {
		http.Error(w, `{"error":{"message":"the script has no more turns","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	turn := s.script[n]
	if turn.Status != 0 && turn.Status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(turn.Status)
		fmt.Fprintf(w, `{"error":{"message":"scripted failure","type":"server_error"}}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	send := func(v any) bool {
		b, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		fl.Flush()
		return true
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	if !send(chunk(map[string]any{"role": "assistant", "content": ""}, nil)) {
		return
	}
	for _, piece := range split(turn.Text, max(turn.Chunks, 1)) {
		if turn.ChunkDelay > 0 {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(turn.ChunkDelay):
			}
		}
		if !send(chunk(map[string]any{"content": piece}, nil)) {
			return
		}
	}
	if turn.Flood > 0 {
		s.flood(r, turn, send, chunk)
		return
	}
	for i, c := range turn.ToolCalls {
		send(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": fmt.Sprintf("call_%d_%d", n, i), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": c.Arguments}}}}, nil))
	}
	finish := "stop"
	if len(turn.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	send(chunk(map[string]any{}, finish))
	prompt := 10
	if s.window > 0 {
		prompt = req.Tokens
	}
	send(map[string]any{"id": "chatcmpl-test", "object": "chat.completion.chunk", "choices": []any{},
		"usage": map[string]any{"prompt_tokens": prompt, "completion_tokens": 5, "total_tokens": prompt + 5}})
	fmt.Fprint(w, "data: [DONE]\n\n")
	fl.Flush()
}

// flood streams turn.Flood bytes in 32 KiB chunks (see Turn.Flood).
func (s *ChatServer) flood(r *http.Request, turn Turn, send func(any) bool, chunk func(map[string]any, any) map[string]any) {
	piece := strings.Repeat("x", 32<<10)
	if turn.FloodArguments {
		if !send(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": "call_flood", "type": "function",
			"function": map[string]any{"name": "lookup", "arguments": ""}}}}, nil)) {
			return
		}
	}
	for sent := int64(0); sent < turn.Flood && r.Context().Err() == nil; sent += int64(len(piece)) {
		delta := map[string]any{"content": piece}
		if turn.FloodArguments {
			delta = map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": piece}}}}
		}
		if !send(chunk(delta, nil)) {
			return
		}
		s.flooded.Add(int64(len(piece)))
	}
}

// split cuts s into n pieces of about equal length (on rune boundaries).
func split(s string, n int) []string {
	r := []rune(s)
	if len(r) == 0 {
		return nil
	}
	n = min(n, len(r))
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, string(r[i*len(r)/n:(i+1)*len(r)/n]))
	}
	return out
}
