package contextfit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/contextfit"
	"github.com/svcdev/svc/internal/llm"
)

// thread is n turns of a user question and an answer of about size bytes
// each, every third answer calling a tool.
func thread(n, size int) []llm.Message {
	var out []llm.Message
	body := strings.Repeat("w", size)
	for i := range n {
		out = append(out, llm.Message{Role: llm.RoleUser, Text: fmt.Sprintf("question %d %s", i, body)})
		if i%3 == 2 {
			id := fmt.Sprintf("call_%d", i)
			out = append(out, llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Name: "lookup", Arguments: `{}`}}},
				llm.Message{Role: llm.RoleTool, ToolCallID: id, Text: "found " + body})
		}
		out = append(out, llm.Message{Role: llm.RoleAssistant, Text: fmt.Sprintf("answer %d %s", i, body)})
	}
	return out
}

func estimate(r contextfit.Result, tools []llm.Tool) int {
	n := contextfit.RequestOverhead + contextfit.TextTokens(r.System) + contextfit.ToolsTokens(tools)
	for i := range r.Messages {
		n += contextfit.MessageTokens(&r.Messages[i])
	}
	return n
}

// checkPairs fails when a tool result is sent without the call it answers
// or a call without its results, or when the conversation does not start
// with the user.
func checkPairs(t *testing.T, msgs []llm.Message) {
	t.Helper()
	require.NotEmpty(t, msgs)
	require.Equal(t, llm.RoleUser, msgs[0].Role, "the conversation sent starts with the user")
	open := map[string]bool{}
	for i, m := range msgs {
		switch m.Role {
		case llm.RoleAssistant:
			require.Empty(t, open, "message %d: calls left unanswered", i)
			for _, c := range m.ToolCalls {
				open[c.ID] = true
			}
		case llm.RoleTool:
			require.True(t, open[m.ToolCallID], "message %d: a result without its call", i)
			delete(open, m.ToolCallID)
		case llm.RoleUser:
			require.Empty(t, open, "message %d: calls left unanswered", i)
		}
	}
}

// summarizer counts its calls and answers a short summary.
type summarizer struct {
	calls []llm.Request
	err   error
}

func (s *summarizer) fn(_ context.Context, req llm.Request) (llm.Response, error) {
	s.calls = append(s.calls, req)
	if s.err != nil {
		err := s.err
		s.err = nil
		return llm.Response{}, err
	}
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Text: fmt.Sprintf("summary %d", len(s.calls))}}, nil
}

func TestNoWindowSendsEverything(t *testing.T) {
	msgs := thread(50, 400)
	r, err := contextfit.Fit(t.Context(), contextfit.Policy{}, contextfit.Input{System: "sys", Messages: msgs}, nil)
	require.NoError(t, err)
	require.Equal(t, "sys", r.System)
	require.Len(t, r.Messages, len(msgs))
	require.Nil(t, r.Compaction)
}

func TestNoWindowKeepsTheSummary(t *testing.T) {
	msgs := thread(50, 400)
	s := &contextfit.Summary{Text: "earlier", Through: 40, Keep: -1}
	r, err := contextfit.Fit(t.Context(), contextfit.Policy{Strategy: contextfit.Summarize},
		contextfit.Input{System: "sys", Messages: msgs, Summary: s}, nil)
	require.NoError(t, err)
	require.Equal(t, msgs[40:], r.Messages)
	require.Contains(t, r.System, "earlier")
	r, err = contextfit.Fit(t.Context(), contextfit.Policy{Strategy: contextfit.Truncate},
		contextfit.Input{System: "sys", Messages: msgs, Summary: s}, nil)
	require.NoError(t, err)
	require.Len(t, r.Messages, len(msgs), "an agent that truncates uses no summary")
}

func TestFitsAtTheWindowsEdge(t *testing.T) {
	msgs := thread(20, 400)
	in := contextfit.Input{System: "sys", Messages: msgs}
	need := estimate(contextfit.Result{System: "sys", Messages: msgs}, nil)
	// Exactly at the edge: everything is sent as it is.
	r, err := contextfit.Fit(t.Context(), contextfit.Policy{Window: need + 100, Reserve: 100, Strategy: contextfit.Truncate}, in, nil)
	require.NoError(t, err)
	require.Len(t, r.Messages, len(msgs))
	require.Equal(t, need, r.Estimate)
	// One token over: the oldest turn goes, and the rest fits.
	r, err = contextfit.Fit(t.Context(), contextfit.Policy{Window: need + 99, Reserve: 100, Strategy: contextfit.Truncate}, in, nil)
	require.NoError(t, err)
	require.Less(t, len(r.Messages), len(msgs))
	require.LessOrEqual(t, estimate(r, nil), need-1)
	require.Equal(t, msgs[len(msgs)-len(r.Messages):], r.Messages, "truncation drops the oldest turns only")
	checkPairs(t, r.Messages)
	require.Nil(t, r.Compaction)
}

func TestTruncateKeepsInputAndCurrentStep(t *testing.T) {
	msgs := thread(30, 400)
	// The run's input, then a step whose results are big.
	msgs = append(msgs, llm.Message{Role: llm.RoleUser, Text: "the input"},
		llm.Message{Role: llm.RoleAssistant, Text: "step 1", ToolCalls: []llm.ToolCall{{ID: "a", Name: "lookup", Arguments: "{}"}}},
		llm.Message{Role: llm.RoleTool, ToolCallID: "a", Text: strings.Repeat("r", 2000)},
		llm.Message{Role: llm.RoleAssistant, Text: "step 2", ToolCalls: []llm.ToolCall{{ID: "b", Name: "lookup", Arguments: "{}"}, {ID: "c", Name: "lookup", Arguments: "{}"}}},
		llm.Message{Role: llm.RoleTool, ToolCallID: "b", Text: strings.Repeat("s", 1500)},
		llm.Message{Role: llm.RoleTool, ToolCallID: "c", Text: "short"})
	r, err := contextfit.Fit(t.Context(), contextfit.Policy{Window: 1300, Reserve: 500, Strategy: contextfit.Truncate, ToolResultShare: 1},
		contextfit.Input{System: "sys", Messages: msgs}, nil)
	require.NoError(t, err)
	checkPairs(t, r.Messages)
	require.Equal(t, "the input", r.Messages[0].Text, "the input stays")
	n := len(r.Messages)
	require.Equal(t, msgs[len(msgs)-3:], r.Messages[n-3:], "the current step stays whole")
	require.NotContains(t, textOf(r.Messages), "step 1", "older steps of the run go when they must")
}

func textOf(msgs []llm.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Text + "\n")
	}
	return b.String()
}

func TestSummarizeOnceThenReuse(t *testing.T) {
	msgs := thread(60, 200)
	s := &summarizer{}
	p := contextfit.Policy{Window: 4000, Reserve: 500, Strategy: contextfit.Summarize}
	r, err := contextfit.Fit(t.Context(), p, contextfit.Input{System: "sys", Messages: msgs}, s.fn)
	require.NoError(t, err)
	require.Len(t, s.calls, 1)
	require.NotNil(t, r.Compaction)
	require.Equal(t, contextfit.Instruction, s.calls[0].System)
	require.Contains(t, r.System, "summary 1")
	require.True(t, strings.HasPrefix(r.System, "sys\n\n## Summary of the earlier conversation"))
	checkPairs(t, r.Messages)
	require.LessOrEqual(t, estimate(r, nil), 3500/2+64, "compaction leaves room for what follows")
	c := r.Compaction
	require.Equal(t, 1, c.FromPosition)
	require.Equal(t, r.Summary.Through, c.ThroughPosition)
	require.Equal(t, c.ThroughPosition, c.Replaced)
	require.Equal(t, msgs[r.Summary.Through:], r.Messages)

	// The next steps reuse it: no new call while the rest fits.
	for i := range 5 {
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Text: fmt.Sprintf("more %d", i)})
		r2, err := contextfit.Fit(t.Context(), p, contextfit.Input{System: "sys", Messages: msgs, Summary: r.Summary}, s.fn)
		require.NoError(t, err)
		require.Nil(t, r2.Compaction)
		require.Contains(t, r2.System, "summary 1")
		require.Equal(t, msgs[r.Summary.Through:], r2.Messages)
	}
	require.Len(t, s.calls, 1, "the summary is computed once")

	// Once the rest outgrows the window, a new summary reads the old one.
	msgs = append(msgs, thread(40, 200)...)
	r3, err := contextfit.Fit(t.Context(), p, contextfit.Input{System: "sys", Messages: msgs, Summary: r.Summary}, s.fn)
	require.NoError(t, err)
	require.Len(t, s.calls, 2)
	require.Contains(t, s.calls[1].Messages[0].Text, "Earlier summary:\nsummary 1")
	require.Greater(t, r3.Summary.Through, r.Summary.Through)
	require.Equal(t, 1, r3.Compaction.FromPosition)
	checkPairs(t, r3.Messages)
}

func TestSummaryKeepsTheInput(t *testing.T) {
	msgs := append(thread(10, 200), llm.Message{Role: llm.RoleUser, Text: "the input"})
	for i := range 30 {
		id := fmt.Sprintf("s%d", i)
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Name: "lookup", Arguments: "{}"}}},
			llm.Message{Role: llm.RoleTool, ToolCallID: id, Text: strings.Repeat("x", 300)})
	}
	s := &summarizer{}
	r, err := contextfit.Fit(t.Context(), contextfit.Policy{Window: 3000, Reserve: 500, Strategy: contextfit.Summarize},
		contextfit.Input{System: "sys", Messages: msgs}, s.fn)
	require.NoError(t, err)
	require.Len(t, s.calls, 1)
	require.Equal(t, "the input", r.Messages[0].Text)
	// 10 turns of two messages, 3 of them with a call and its result, then the input.
	require.Equal(t, 10*2+3*2+1, r.Summary.Keep+1, "the input's position is kept")
	require.NotNil(t, r.Compaction.KeptPosition)
	require.Equal(t, r.Summary.Keep+1, *r.Compaction.KeptPosition)
	checkPairs(t, r.Messages)
	require.Equal(t, msgs[len(msgs)-2:], r.Messages[len(r.Messages)-2:])
}

func TestLongToolResultShortened(t *testing.T) {
	big := strings.Repeat("é", 10_000)
	msgs := []llm.Message{{Role: llm.RoleUser, Text: "go"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "a", Name: "fetch", Arguments: "{}"}}},
		{Role: llm.RoleTool, ToolCallID: "a", Text: big}}
	r, err := contextfit.Fit(t.Context(), contextfit.Policy{Window: 100_000, Reserve: 1000, ToolResultShare: 0.01},
		contextfit.Input{Messages: msgs}, nil)
	require.NoError(t, err)
	got := r.Messages[2].Text
	require.Less(t, len(got), len(big))
	require.Contains(t, got, fmt.Sprintf("[svc: this tool result was shortened from %d to ", len(big)))
	require.Equal(t, big, msgs[2].Text, "the conversation itself is unchanged")
	require.LessOrEqual(t, contextfit.MessageTokens(&r.Messages[2]), 1000+contextfit.TextTokens(contextfit.ShortenedMarker)+8)
}

func TestForceCompactsAndCalibrationCounts(t *testing.T) {
	msgs := thread(40, 200)
	s := &summarizer{}
	p := contextfit.Policy{Window: 100_000, Reserve: 1000, Strategy: contextfit.Summarize}
	r, err := contextfit.Fit(t.Context(), p, contextfit.Input{Messages: msgs}, s.fn)
	require.NoError(t, err)
	require.Nil(t, r.Compaction, "fits by the estimate")
	// The vendor counted four times the estimate: it no longer fits.
	cal := &contextfit.Calibration{Estimated: r.Estimate, Reported: 4 * r.Estimate}
	p.Window = 3 * r.Estimate
	r, err = contextfit.Fit(t.Context(), p, contextfit.Input{Messages: msgs, Calibration: cal}, s.fn)
	require.NoError(t, err)
	require.NotNil(t, r.Compaction)
	require.Len(t, s.calls, 1)
	// Force compacts what the estimate says fits.
	p.Window = 100_000
	r, err = contextfit.Fit(t.Context(), p, contextfit.Input{Messages: msgs, Force: true}, s.fn)
	require.NoError(t, err)
	require.NotNil(t, r.Compaction)
	require.Len(t, s.calls, 2)
}

func TestSummarizingCallRefusedAsTooLongTriesOnceWithLess(t *testing.T) {
	msgs := thread(60, 200)
	s := &summarizer{err: &llm.Error{API: "chat_completions", StatusCode: 400}}
	_, err := contextfit.Fit(t.Context(), contextfit.Policy{Window: 4000, Reserve: 500, Strategy: contextfit.Summarize},
		contextfit.Input{Messages: msgs}, s.fn)
	require.Error(t, err, "any other failure is the caller's")
	require.Len(t, s.calls, 1)

	s = &summarizer{err: fmt.Errorf("wrapped: %w", &llm.ContextLengthError{Limit: 4000, Tokens: 5000})}
	r, err := contextfit.Fit(t.Context(), contextfit.Policy{Window: 4000, Reserve: 500, Strategy: contextfit.Summarize},
		contextfit.Input{Messages: msgs}, s.fn)
	require.NoError(t, err)
	require.Len(t, s.calls, 2)
	require.Less(t, len(s.calls[1].Messages[0].Text), len(s.calls[0].Messages[0].Text))
	require.Less(t, r.Compaction.Summarized, r.Compaction.Replaced)
	require.True(t, errors.Is(err, nil))
}
