// Command demomodel is a development tool, not part of the service: a small
// model server that speaks OpenAI's chat completions, so that svc can run an
// agent on a machine with no internet and no vendor account (`make run`
// starts it beside svc). It is not a language model: its answers are
// scripted from the conversation it is sent.
//
//	demomodel [-addr 127.0.0.1:8090] [-model svc-demo] [-chunk-delay 40ms]
//
// It serves, under /v1 (the base URL of an openai_compatible provider):
//
//	GET  /v1/models            the one model it serves
//	POST /v1/chat/completions  an answer, streamed as server-sent events
//	                           ("stream": true) or as one JSON object
//
// and, to try webhook subscriptions on the same machine:
//
//	POST /hooks/...            answers 204 and logs the delivery's event type
//	                           and webhook-id (the signature is not checked)
//
// How it answers a conversation, from its last user message on:
//
//   - When tools are offered and none was called since that message, it
//     calls one: the first whose name the message mentions, else the first
//     offered. The call's arguments are made from the tool's JSON Schema:
//     each required string is the text between the message's first pair of
//     double quotes, or else the whole message (cut to the schema's
//     maxLength), an enum its first value, a number its default or minimum,
//     an object {} and a list [].
//   - When a tool has answered, it says which tool it called and quotes the
//     answer (its first 400 characters).
//   - Otherwise it repeats the message and says what it is.
//
// The answer's text is streamed a few words a chunk, chunk-delay apart. The
// last chunk before [DONE] carries the usage when the request asks for it
// (stream_options.include_usage), as OpenAI's does. Usage is counted, not
// made up: a token is four bytes, rounded up, of the request's messages and
// tools (prompt) and of the answer's text and tool call (completion); the
// server has no tokenizer, so the figures are estimates of that rule.
//
// It prints the base URL on the first line of stdout once it listens, logs
// one line per request on stderr, and stops on SIGINT or SIGTERM.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/svcdev/svc/internal/llm/llmtest"
)

// maxBody bounds a request body.
const maxBody = 8 << 20

// quoteRunes bounds the quote of a tool's answer.
const quoteRunes = 400

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "listen address")
	model := flag.String("model", "svc-demo", "the model's name")
	delay := flag.Duration("chunk-delay", 40*time.Millisecond, "pause between streamed chunks")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: demomodel [-addr ADDR] [-model NAME] [-chunk-delay D]")
		os.Exit(2)
	}
	if err := serve(*addr, &server{model: *model, delay: *delay, started: time.Now().Unix()}); err != nil {
		fmt.Fprintf(os.Stderr, "demomodel: %v\n", err)
		os.Exit(1)
	}
}

func serve(addr string, s *server) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Printf("http://%s/v1\n", ln.Addr())
	srv := &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		_ = srv.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// server answers as the model named model.
type server struct {
	model   string
	delay   time.Duration
	started int64
	seq     atomic.Int64
}

func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("POST /v1/chat/completions", s.chat)
	mux.HandleFunc("POST /hooks/", hook)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "invalid_request_error", "not_found", "Unknown request URL: "+r.Method+" "+r.URL.Path)
	})
	return mux
}

func (s *server) models(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{
		map[string]any{"id": s.model, "object": "model", "created": s.started, "owned_by": "svc-demo"},
	}})
}

// hook takes a webhook delivery: 204, and a log line.
func hook(w http.ResponseWriter, r *http.Request) {
	var event struct {
		Type string `json:"type"`
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxBody))
	_ = json.Unmarshal(body, &event)
	log.Printf("webhook %s: %s, webhook-id %s, %d bytes", r.URL.Path, event.Type, r.Header.Get("webhook-id"), len(body))
	w.WriteHeader(http.StatusNoContent)
}

// chatRequest is what the server reads of a request besides the
// conversation, which llmtest.Request reads.
type chatRequest struct {
	Stream        bool `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

func (s *server) chat(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "", "the request body is too large")
		return
	}
	var req llmtest.Request
	var opts chatRequest
	if json.Unmarshal(body, &req) != nil || json.Unmarshal(body, &opts) != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "the request body is not a JSON object")
		return
	}
	if req.Model != s.model {
		writeError(w, http.StatusNotFound, "invalid_request_error", "model_not_found",
			fmt.Sprintf("The model `%s` does not exist; this server serves %q.", req.Model, s.model))
		return
	}
	if len(req.Messages) == 0 {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "messages must not be empty")
		return
	}
	a := answer(req)
	a.prompt = tokens(len(mustJSON(req.Messages)) + len(mustJSON(req.Tools)))
	id := fmt.Sprintf("chatcmpl-demo-%d", s.seq.Add(1))
	what := "text"
	if a.call != nil {
		what = "tool call " + a.call.Name
	}
	log.Printf("chat completion %s: %d messages, %d tools: %s (prompt %d, completion %d tokens)",
		id, len(req.Messages), len(req.Tools), what, a.prompt, a.completion())
	if opts.Stream {
		s.stream(w, r, id, a, opts.StreamOptions.IncludeUsage)
		return
	}
	msg := map[string]any{"role": "assistant", "content": a.text}
	finish := "stop"
	if a.call != nil {
		msg["content"] = nil
		msg["tool_calls"] = []any{a.toolCall()}
		finish = "tool_calls"
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": id, "object": "chat.completion", "created": time.Now().Unix(), "model": s.model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   a.usage(),
	})
}

// stream sends a as chat completion chunks, a few words each.
func (s *server) stream(w http.ResponseWriter, r *http.Request, id string, a reply, usage bool) {
	fl, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "server_error", "", "streaming is not supported here")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	created := time.Now().Unix()
	send := func(v any) bool {
		if _, err := fmt.Fprintf(w, "data: %s\n\n", mustJSON(v)); err != nil {
			return false
		}
		fl.Flush()
		return true
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": s.model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	if !send(chunk(map[string]any{"role": "assistant", "content": ""}, nil)) {
		return
	}
	for _, piece := range pieces(a.text, 3) {
		if !s.pause(r) || !send(chunk(map[string]any{"content": piece}, nil)) {
			return
		}
	}
	finish := "stop"
	if a.call != nil {
		finish = "tool_calls"
		if !s.pause(r) || !send(chunk(map[string]any{"tool_calls": []any{a.toolCall()}}, nil)) {
			return
		}
	}
	if !send(chunk(map[string]any{}, finish)) {
		return
	}
	if usage {
		send(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": s.model,
			"choices": []any{}, "usage": a.usage()})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	fl.Flush()
}

// pause waits the chunk delay; false when the client left.
func (s *server) pause(r *http.Request) bool {
	if s.delay <= 0 {
		return r.Context().Err() == nil
	}
	t := time.NewTimer(s.delay)
	defer t.Stop()
	select {
	case <-r.Context().Done():
		return false
	case <-t.C:
		return true
	}
}

// reply is what the server answers: text, or one tool call (with the text
// that comes before it, if any).
type reply struct {
	text   string
	call   *llmtest.Call
	callID string
	prompt int
}

func (a reply) toolCall() map[string]any {
	return map[string]any{"index": 0, "id": a.callID, "type": "function",
		"function": map[string]any{"name": a.call.Name, "arguments": a.call.Arguments}}
}

func (a reply) completion() int {
	n := len(a.text)
	if a.call != nil {
		n += len(a.call.Name) + len(a.call.Arguments)
	}
	return tokens(n)
}

func (a reply) usage() map[string]any {
	c := a.completion()
	return map[string]any{"prompt_tokens": a.prompt, "completion_tokens": c, "total_tokens": a.prompt + c}
}

// tokens counts n bytes as tokens: four bytes a token, rounded up.
func tokens(n int) int { return (n + 3) / 4 }

// answer decides the reply to req's conversation.
func answer(req llmtest.Request) reply {
	conv := req.Conversation()
	last := -1
	for i, m := range conv {
		if m.Role == "user" {
			last = i
		}
	}
	input := ""
	if last >= 0 {
		input = strings.TrimSpace(conv[last].Text)
	}
	var called *llmtest.Call
	var result *llmtest.Message
	for i := last + 1; i < len(conv); i++ {
		m := conv[i]
		if m.Role == "assistant" && len(m.ToolCalls) > 0 {
			called = &m.ToolCalls[0]
		}
		if m.Role == "tool" {
			result = &conv[i]
		}
	}
	switch {
	case result != nil:
		name := "a tool"
		if called != nil {
			name = called.Name
		}
		verb := "answered"
		if result.IsError {
			verb = "failed"
		}
		return reply{text: fmt.Sprintf("I called %s and it %s: %s\nThat is all this demo model does: "+
			"it calls one tool when it is offered some, then quotes what the tool said.", name, verb, quote(result.Text))}
	case len(req.Tools) > 0 && called == nil:
		tool := chooseTool(req.Tools, input)
		name := toolName(tool)
		return reply{
			text:   fmt.Sprintf("Let me call %s. ", name),
			call:   &llmtest.Call{Name: name, Arguments: string(mustJSON(arguments(toolParameters(tool), quoted(input))))},
			callID: fmt.Sprintf("call_demo_%d", len(conv)),
		}
	case input == "":
		return reply{text: "This is svc's demo model. Send a message and it answers."}
	default:
		return reply{text: fmt.Sprintf("You said: %q. This is svc's demo model: it runs offline and answers "+
			"from a script; give the agent a tool (a memory, say) and it calls it.", input)}
	}
}

// quoted is the text between the first pair of double quotes of s, or s.
func quoted(s string) string {
	_, rest, ok := strings.Cut(s, `"`)
	if !ok {
		return s
	}
	if q, _, ok := strings.Cut(rest, `"`); ok && strings.TrimSpace(q) != "" {
		return q
	}
	return s
}

// quote is the first quoteRunes characters of s, marked when cut.
func quote(s string) string {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) <= quoteRunes {
		return s
	}
	r := []rune(s)
	return string(r[:quoteRunes]) + " [...]"
}

// chooseTool picks the first tool whose name the input mentions, else the
// first tool.
func chooseTool(tools []map[string]any, input string) map[string]any {
	lower := strings.ToLower(input)
	for _, t := range tools {
		if n := toolName(t); n != "" && strings.Contains(lower, strings.ToLower(n)) {
			return t
		}
	}
	return tools[0]
}

// function is a tool's function object (chat completions wrap it).
func function(t map[string]any) map[string]any {
	if fn, ok := t["function"].(map[string]any); ok {
		return fn
	}
	return t
}

func toolName(t map[string]any) string {
	name, _ := function(t)["name"].(string)
	return name
}

func toolParameters(t map[string]any) map[string]any {
	p, _ := function(t)["parameters"].(map[string]any)
	return p
}

// arguments fills the required members of the object schema params.
func arguments(params map[string]any, input string) map[string]any {
	out := map[string]any{}
	props, _ := params["properties"].(map[string]any)
	required, _ := params["required"].([]any)
	names := make([]string, 0, len(required))
	for _, r := range required {
		if n, ok := r.(string); ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		p, _ := props[n].(map[string]any)
		out[n] = value(p, input)
	}
	return out
}

// value is a value of schema p made from input.
func value(p map[string]any, input string) any {
	if enum, ok := p["enum"].([]any); ok && len(enum) > 0 {
		return enum[0]
	}
	if d, ok := p["default"]; ok {
		return d
	}
	typ, _ := p["type"].(string)
	switch typ {
	case "integer", "number":
		if m, ok := p["minimum"].(float64); ok {
			return m
		}
		return 1
	case "boolean":
		return false
	case "object":
		return map[string]any{}
	case "array":
		return []any{}
	}
	s := input
	if s == "" {
		s = "demo"
	}
	if m, ok := p["maxLength"].(float64); ok && utf8.RuneCountInString(s) > int(m) {
		s = string([]rune(s)[:int(m)])
	}
	return s
}

// pieces cuts s into pieces of n words each, keeping the spaces.
func pieces(s string, n int) []string {
	var out []string
	words := strings.SplitAfter(s, " ")
	for i := 0; i < len(words); i += n {
		out = append(out, strings.Join(words[i:min(i+n, len(words))], ""))
	}
	return out
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Every value sent is built from decoded JSON, strings and numbers.
		panic("demomodel: encode: " + err.Error())
	}
	return b
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(mustJSON(v))
}

// writeError answers OpenAI's error body.
func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	e := map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}
	if code != "" {
		e["code"] = code
	}
	writeJSON(w, status, map[string]any{"error": e})
}
