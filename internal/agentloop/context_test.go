package agentloop_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/agentloop"
	"github.com/svcdev/svc/internal/contextfit"
	"github.com/svcdev/svc/internal/llm"
)

// history is turns questions and answers of about 200 bytes each, then
// the run's input.
func history(turns int) []llm.Message {
	var out []llm.Message
	pad := strings.Repeat("p", 180)
	for i := range turns {
		out = append(out, llm.Message{Role: llm.RoleUser, Text: fmt.Sprintf("q%d %s", i, pad)},
			llm.Message{Role: llm.RoleAssistant, Text: fmt.Sprintf("a%d %s", i, pad)})
	}
	return append(out, user)
}

// summaryTurn is the model's answer to a summarizing call.
func summaryTurn(text string) turn {
	return turn{Resp: llm.Response{Message: llm.Message{Text: text}, FinishReason: llm.FinishStop,
		Usage: llm.Usage{InputTokens: 7, OutputTokens: 3}}}
}

// A conversation over the window is summarized before the step's model
// call, once: the next step reuses the summary from the state, which the
// step's checkpoint holds, and the step records the compaction.
func TestRunSummarizesOnceAcrossSteps(t *testing.T) {
	t.Parallel()
	h := newHost()
	model := &scriptedModel{turns: []turn{summaryTurn("They talked about q0 to q80."),
		calling("", 10, `c1:lookup:{"word":"banana"}`), answer("Banana has 6 letters.", 10)}}
	spec := agentloop.Spec{Model: model, ModelName: "m", System: "Be brief.", Tools: toolsOf(h, []string{"lookup"}),
		Limits:  withClock(agentloop.Limits{MaxSteps: 5}),
		Context: contextfit.Policy{Window: 4000, Reserve: 500, Strategy: contextfit.Summarize}}
	msgs := history(100)
	out, err := agentloop.Run(t.Context(), spec, agentloop.State{Messages: msgs}, h)
	require.NoError(t, err)
	require.Nil(t, out.Failure)
	require.Equal(t, "Banana has 6 letters.", out.Final)

	reqs := model.requests()
	require.Len(t, reqs, 3, "one summarizing call, then the two steps")
	require.Equal(t, contextfit.Instruction, reqs[0].System)
	require.Empty(t, reqs[0].Tools)
	for _, r := range reqs[1:] {
		require.True(t, strings.HasPrefix(r.System, "Be brief.\n\n## Summary of the earlier conversation"), r.System)
		require.Contains(t, r.System, "They talked about q0 to q80.")
		require.NoError(t, r.Validate())
	}
	require.Equal(t, user, reqs[1].Messages[len(reqs[1].Messages)-1], "the input stays")
	require.Equal(t, llm.RoleUser, reqs[1].Messages[0].Role, "what is sent starts with the user")
	require.Less(t, len(reqs[1].Messages), len(msgs)/2)
	last := reqs[2].Messages
	require.Equal(t, llm.RoleTool, last[len(last)-1].Role, "the step's results are sent")
	require.Equal(t, "c1", last[len(last)-2].ToolCalls[0].ID, "with their call")

	require.Len(t, h.steps, 2)
	c := h.steps[0].Compaction
	require.NotNil(t, c)
	require.Equal(t, "They talked about q0 to q80.", c.Summary)
	require.Nil(t, c.KeptPosition, "the input is after the replaced messages")
	require.Equal(t, 1, c.FromPosition)
	require.Equal(t, len(msgs)-len(reqs[1].Messages), c.ThroughPosition)
	require.Nil(t, h.steps[1].Compaction)
	require.Equal(t, h.steps[0].State.Summary, h.steps[1].State.Summary, "the checkpoint carries the summary")
	require.NotNil(t, h.steps[1].State.Calibration)
	require.Equal(t, 7+10+10, out.State.Usage.InputTokens, "the summarizing call counts")
	require.Len(t, out.State.Messages, len(msgs)+3, "the conversation itself is whole")
}

// A vendor's context-length refusal makes the loop compact with the
// vendor's numbers and send once more; a second refusal fails the run.
func TestRunRecoversFromContextLengthRefusal(t *testing.T) {
	t.Parallel()
	refusal := fmt.Errorf("llm: chat_completions: HTTP 400: %w", &llm.ContextLengthError{Limit: 3000, Tokens: 9000})
	h := newHost()
	model := &scriptedModel{turns: []turn{{Err: refusal}, summaryTurn("Earlier: small talk."), answer("Six.", 10)}}
	spec := agentloop.Spec{Model: model, ModelName: "m", Limits: withClock(agentloop.Limits{MaxSteps: 5})}
	out, err := agentloop.Run(t.Context(), spec, agentloop.State{Messages: history(60)}, h)
	require.NoError(t, err)
	require.Nil(t, out.Failure)
	require.Equal(t, "Six.", out.Final)
	reqs := model.requests()
	require.Len(t, reqs, 3)
	require.Len(t, reqs[0].Messages, 121, "sent whole while the window is unknown")
	require.Equal(t, contextfit.Instruction, reqs[1].System)
	require.Less(t, len(reqs[2].Messages), 121)
	require.Equal(t, user, reqs[2].Messages[len(reqs[2].Messages)-1])
	require.NotNil(t, h.steps[0].Compaction)

	h = newHost()
	model = &scriptedModel{turns: []turn{{Err: refusal}, summaryTurn("Earlier: small talk."), {Err: refusal}}}
	spec.Model = model
	out, err = agentloop.Run(t.Context(), spec, agentloop.State{Messages: history(60)}, h)
	require.NoError(t, err)
	require.NotNil(t, out.Failure)
	require.Equal(t, agentloop.CodeModel, out.Failure.Code)
	require.Len(t, model.requests(), 3, "compacted and retried once only")
}
