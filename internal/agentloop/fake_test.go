package agentloop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/svcdev/svc/internal/agentloop"
	"github.com/svcdev/svc/internal/llm"
	"github.com/svcdev/svc/internal/tool"
)

// turn is one scripted answer of the model: text streamed as deltas, then
// either the response or an error. Block waits for the call's context to
// end and returns its error, as a vendor that never answers would.
type turn struct {
	Deltas []string
	Resp   llm.Response
	Err    error
	Block  bool
}

// answer is a turn that ends with text (no tool calls).
func answer(text string, usage int) turn {
	return turn{Deltas: []string{text}, Resp: llm.Response{
		Message: llm.Message{Text: text}, FinishReason: llm.FinishStop,
		Usage: llm.Usage{InputTokens: usage, OutputTokens: usage},
	}}
}

// calling is a turn that asks for tool calls, given as "id:name:arguments".
func calling(text string, usage int, calls ...string) turn {
	var tc []llm.ToolCall
	for _, c := range calls {
		parts := strings.SplitN(c, ":", 3)
		tc = append(tc, llm.ToolCall{ID: parts[0], Name: parts[1], Arguments: parts[2]})
	}
	t := turn{Resp: llm.Response{
		Message: llm.Message{Text: text, ToolCalls: tc}, FinishReason: llm.FinishToolCalls,
		Usage: llm.Usage{InputTokens: usage, OutputTokens: usage},
	}}
	if text != "" {
		t.Deltas = []string{text}
	}
	return t
}

// scriptedModel answers the n-th call with the n-th turn and keeps every
// request it was sent.
type scriptedModel struct {
	mu    sync.Mutex
	turns []turn
	reqs  []llm.Request
}

var _ llm.Model = (*scriptedModel)(nil)

func (m *scriptedModel) Stream(ctx context.Context, req llm.Request, fn func(llm.Event) error) (llm.Response, error) {
	m.mu.Lock()
	n := len(m.reqs)
	req.Messages = slices.Clone(req.Messages) // the loop goes on appending to its own slice
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	if n >= len(m.turns) {
		return llm.Response{}, fmt.Errorf("scripted model: no turn %d", n+1)
	}
	if err := ctx.Err(); err != nil {
		return llm.Response{}, err
	}
	t := m.turns[n]
	for _, d := range t.Deltas {
		if err := fn(llm.Event{Kind: llm.EventTextDelta, Text: d}); err != nil {
			return llm.Response{}, err
		}
	}
	if t.Block {
		<-ctx.Done()
		return llm.Response{}, ctx.Err()
	}
	return t.Resp, t.Err
}

func (m *scriptedModel) requests() []llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.reqs)
}

// fakeHost records what the loop reports, in order, as a user of the run
// would see it: the streamed text, the announced tool calls and the
// recorded steps.
type fakeHost struct {
	mu     sync.Mutex
	deltas []string
	// log is every report in order: "tool_calls a,b", "call a", "step 1".
	log   []string
	steps []agentloop.StepRecord

	// steps the host lets the loop start (Continue); <0 for any number.
	allow int
	// answers are what Await returns; awaited the ids it was asked for.
	answers map[string]tool.Result
	awaited [][]string
	// decisions are what Decisions returns.
	decisions map[string]agentloop.Decision

	stepErr      error
	toolCallsErr error
	awaitErr     error
}

var _ agentloop.Host = (*fakeHost)(nil)

func newHost() *fakeHost { return &fakeHost{allow: -1} }

func (h *fakeHost) Delta(text string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.deltas = append(h.deltas, text)
}

func (h *fakeHost) ToolCalls(_ context.Context, calls []llm.ToolCall) error {
	ids := make([]string, len(calls))
	for i, c := range calls {
		ids[i] = c.ID
	}
	h.note("tool_calls " + strings.Join(ids, ","))
	return h.toolCallsErr
}

func (h *fakeHost) Step(_ context.Context, rec agentloop.StepRecord) error {
	if h.stepErr != nil {
		return h.stepErr
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.steps = append(h.steps, rec)
	h.log = append(h.log, fmt.Sprintf("step %d", rec.State.Step))
	return nil
}

func (h *fakeHost) Continue() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.allow == 0 {
		return false
	}
	if h.allow > 0 {
		h.allow--
	}
	return true
}

func (h *fakeHost) Await(_ context.Context, calls []string) (map[string]tool.Result, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.awaited = append(h.awaited, slices.Clone(calls))
	if h.awaitErr != nil {
		return nil, h.awaitErr
	}
	out := map[string]tool.Result{}
	for _, id := range calls {
		if r, ok := h.answers[id]; ok {
			out[id] = r
		}
	}
	return out, nil
}

func (h *fakeHost) Decisions(_ context.Context, calls []string) (map[string]agentloop.Decision, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.log = append(h.log, "decisions "+strings.Join(calls, ","))
	out := map[string]agentloop.Decision{}
	for _, id := range calls {
		if d, ok := h.decisions[id]; ok {
			out[id] = d
		}
	}
	return out, nil
}

func (h *fakeHost) note(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.log = append(h.log, s)
}

// records describes the recorded steps in one line each:
//
//	1 "text" calls a:lookup b:fail -> a="..." b=!"..."
//	2 final "text"
//	1 "text" calls a:later -> waiting
//	1 resumed -> a="..."
func (h *fakeHost) records() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.steps))
	for _, r := range h.steps {
		var b strings.Builder
		fmt.Fprintf(&b, "%d ", r.State.Step)
		switch {
		case r.Resumed:
			b.WriteString("resumed")
		case r.Final:
			fmt.Fprintf(&b, "final %q", r.Assistant.Text)
		default:
			fmt.Fprintf(&b, "%q calls", r.Assistant.Text)
			for _, c := range r.Assistant.ToolCalls {
				fmt.Fprintf(&b, " %s:%s", c.ID, c.Name)
			}
		}
		switch {
		case r.Waiting:
			b.WriteString(" -> waiting")
		case len(r.Results) > 0:
			b.WriteString(" ->")
			for _, m := range r.Results {
				mark := ""
				if m.IsError {
					mark = "!"
				}
				fmt.Fprintf(&b, " %s=%s%q", m.ToolCallID, mark, m.Text)
			}
		}
		out = append(out, b.String())
	}
	return out
}

func (h *fakeHost) reports() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.log)
}

// Tools of the tests. Each notes its call in the host's log.

// lookupTool answers "<word> has <n> letters".
func lookupTool(h *fakeHost) tool.Tool {
	return tool.Tool{
		Def: llm.Tool{Name: "lookup", Description: "Looks a word up.", Parameters: json.RawMessage(`{"type":"object"}`)},
		Call: func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
			h.note("call " + tool.CallID(ctx))
			var in struct {
				Word string `json:"word"`
			}
			if res, ok := tool.Decode(args, &in); !ok {
				return res, nil
			}
			return tool.Result{Text: fmt.Sprintf("%s has %d letters", in.Word, len(in.Word))}, nil
		},
	}
}

// refusingTool fails as the model's business: the run goes on.
func refusingTool(h *fakeHost) tool.Tool {
	return tool.Tool{
		Def: llm.Tool{Name: "refuse"},
		Call: func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
			h.note("call " + tool.CallID(ctx))
			return tool.Errorf("not allowed"), nil
		},
	}
}

var errToolBroken = errors.New("the environment is gone")

// brokenTool fails as svc's business: the step stops.
func brokenTool(h *fakeHost) tool.Tool {
	return tool.Tool{
		Def: llm.Tool{Name: "broken"},
		Call: func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
			h.note("call " + tool.CallID(ctx))
			return tool.Result{}, errToolBroken
		},
	}
}

// panickingTool panics.
func panickingTool(h *fakeHost) tool.Tool {
	return tool.Tool{
		Def: llm.Tool{Name: "panics"},
		Call: func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
			h.note("call " + tool.CallID(ctx))
			panic("boom")
		},
	}
}

// laterTool's answer comes after the step (a subagent's): its result is pending.
func laterTool(h *fakeHost) tool.Tool {
	return tool.Tool{
		Def: llm.Tool{Name: "later"},
		Call: func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
			h.note("call " + tool.CallID(ctx))
			return tool.Result{Pending: true}, nil
		},
	}
}
