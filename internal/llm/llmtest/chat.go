// Package llmtest serves scripted conversations over the vendors' wire
// protocols, for tests of what calls models: the worker, the API, the
// binary. NewChatServer speaks OpenAI's chat completions, NewMessagesServer
// Anthropic's messages; both stream their answers as server-sent events
// flushed per chunk.
//
// A script is a list of turns. The turn a request gets is chosen by the
// conversation it sends, not by the order of requests: the number of
// assistant messages in it. So a request repeated after a crash (the same
// conversation) gets the same turn again, as a real model would answer the
// same question again.
//
// A server made with Window refuses a request longer than its context
// window as its vendor does (HTTP 400: OpenAI's context_length_exceeded,
// Anthropic's "prompt is too long"), and reports a request's length as the
// usage's prompt tokens. It counts a request's tokens as the bytes over
// four of its body as chat completions send it: a messages server counts
// the same conversation's chat completions body, since a tokenizer counts
// the text and not the framing of content blocks (wordier in the messages
// protocol), so a conversation is as long for either server.
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
	// Status, when not 0 or 200, is answered instead (with the vendor's
	// error body).
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

// Server is a scripted model endpoint at URL, which is the base URL of its
// vendor's API as a provider's base_url names it.
type Server struct {
	*httptest.Server
	wire   wire
	script []Turn
	window int
	cycle  bool

	mu       sync.Mutex
	requests []Request
	flooded  atomic.Int64
}

// ChatServer is a Server speaking chat completions: requests go to URL +
// "/chat/completions".
type ChatServer = Server

// wire is what a vendor's protocol makes a server do its own way.
type wire struct {
	// path ends the path requests are posted to.
	path string
	// check answers the status and message a request is refused with as
	// the vendor would, 0 when it is accepted.
	check func(r *http.Request, body []byte, req Request) (int, string)
	// tokens counts a request's tokens.
	tokens func(body []byte, req Request) int
	// errorBody is the vendor's error body of status.
	errorBody func(status int, message string) any
	// tooLong is the vendor's refusal (HTTP 400) of a request of tokens
	// longer than window.
	tooLong func(window, tokens int) any
	// stream answers turn, the script's n-th.
	stream func(s *Server, w http.ResponseWriter, r *http.Request, req Request, n int, turn Turn)
}

// Option changes how a server answers.
type Option func(*Server)

// Window makes the server refuse, as its vendor does, a request longer
// than tokens (counted as the package's doc says), and report a request's length
// as its prompt tokens.
func Window(tokens int) Option { return func(s *Server) { s.window = tokens } }

// Cycle makes the server answer a conversation with n assistant messages
// with turn n modulo the script's length, so a script never runs out: for
// long threads, whose conversation a client may shorten.
func Cycle() Option { return func(s *Server) { s.cycle = true } }

// FloodSent is the bytes of flood chunks written so far (see Turn.Flood).
func (s *Server) FloodSent() int64 { return s.flooded.Load() }

// NewChatServer starts a server playing script over chat completions;
// Close it when done.
func NewChatServer(script []Turn, opts ...Option) *ChatServer {
	return start(wire{path: "/chat/completions", check: func(*http.Request, []byte, Request) (int, string) { return 0, "" },
		tokens: func(body []byte, _ Request) int { return tokens(body) }, errorBody: chatError, tooLong: chatTooLong, stream: (*Server).streamChat}, script, opts)
}

func start(w wire, script []Turn, opts []Option) *Server {
	s := &Server{wire: w, script: script}
	for _, o := range opts {
		o(s)
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// tokens counts a request body as the server does.
func tokens(body []byte) int { return (len(body) + 3) / 4 }

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// prompt is the prompt tokens the usage reports for req.
func (s *Server) prompt(req Request) int {
	if s.window > 0 {
		return req.Tokens
	}
	return 10
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, s.wire.path) {
		writeJSON(w, http.StatusNotFound, s.wire.errorBody(http.StatusNotFound, "not found"))
		return
	}
	body, err := io.ReadAll(r.Body)
	var req Request
	if err == nil {
		err = json.NewDecoder(bytes.NewReader(body)).Decode(&req)
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, s.wire.errorBody(http.StatusBadRequest, "bad json"))
		return
	}
	req.Tokens = s.wire.tokens(body, req)
	status, msg := s.wire.check(r, body, req)
	req.Refused = status == 0 && s.window > 0 && req.Tokens > s.window
	s.mu.Lock()
	i := len(s.requests)
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.requests[i].Ended = true
		s.mu.Unlock()
	}()
	if status != 0 {
		writeJSON(w, status, s.wire.errorBody(status, msg))
		return
	}
	if req.Refused {
		writeJSON(w, http.StatusBadRequest, s.wire.tooLong(s.window, req.Tokens))
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
		writeJSON(w, http.StatusBadRequest, s.wire.errorBody(http.StatusBadRequest, "the script has no more turns"))
		return
	}
	turn := s.script[n]
	if turn.Status != 0 && turn.Status != http.StatusOK {
		writeJSON(w, turn.Status, s.wire.errorBody(turn.Status, "scripted failure"))
		return
	}
	s.wire.stream(s, w, r, req, n, turn)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// chatError is OpenAI's error body.
func chatError(status int, message string) any {
	typ := "server_error"
	if status == http.StatusBadRequest || status == http.StatusNotFound {
		typ = "invalid_request_error"
	}
	return map[string]any{"error": map[string]any{"message": message, "type": typ}}
}

// chatTooLong is OpenAI's context-length refusal.
func chatTooLong(window, tokens int) any {
	return map[string]any{"error": map[string]any{
		"message": fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", window, tokens),
		"type":    "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}
}

// streamChat streams turn as chat completion chunks.
func (s *Server) streamChat(w http.ResponseWriter, r *http.Request, req Request, n int, turn Turn) {
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
		if !pause(r, turn.ChunkDelay) || !send(chunk(map[string]any{"content": piece}, nil)) {
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
	prompt := s.prompt(req)
	send(map[string]any{"id": "chatcmpl-test", "object": "chat.completion.chunk", "choices": []any{},
		"usage": map[string]any{"prompt_tokens": prompt, "completion_tokens": 5, "total_tokens": prompt + 5}})
	fmt.Fprint(w, "data: [DONE]\n\n")
	fl.Flush()
}

// pause waits d, false when the client left first.
func pause(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	select {
	case <-r.Context().Done():
		return false
	case <-time.After(d):
		return true
	}
}

// flood streams turn.Flood bytes in 32 KiB chunks (see Turn.Flood).
func (s *Server) flood(r *http.Request, turn Turn, send func(any) bool, chunk func(map[string]any, any) map[string]any) {
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
