package agentloop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/agentloop"
	"github.com/svcdev/svc/internal/llm"
	"github.com/svcdev/svc/internal/tool"
)

// user is the input of a fresh run.
var user = llm.Message{Role: llm.RoleUser, Text: "How long is banana?"}

// checkpoint is the state recorded after a first step that called lookup:
// what a worker that resumes the run reads.
func checkpoint() agentloop.State {
	return agentloop.State{
		Messages: []llm.Message{
			user,
			{Role: llm.RoleAssistant, Text: "Looking.", ToolCalls: []llm.ToolCall{{ID: "a", Name: "lookup", Arguments: `{"word":"banana"}`}}},
			{Role: llm.RoleTool, ToolCallID: "a", Text: "banana has 6 letters"},
		},
		Step:  1,
		Usage: llm.Usage{InputTokens: 10, OutputTokens: 10},
	}
}

// waiting is the state recorded after a first step whose call b waits for
// an answer (a subagent) while call a was answered at once.
func waiting() agentloop.State {
	calls := []llm.ToolCall{{ID: "a", Name: "lookup", Arguments: `{"word":"fig"}`}, {ID: "b", Name: "later", Arguments: `{}`}}
	return agentloop.State{
		Messages: []llm.Message{user, {Role: llm.RoleAssistant, Text: "Asking.", ToolCalls: calls}},
		Step:     1,
		Usage:    llm.Usage{InputTokens: 1, OutputTokens: 1},
		Waiting: &agentloop.Waiting{Calls: calls, Done: map[string]llm.Message{
			"a": {Role: llm.RoleTool, ToolCallID: "a", Text: "fig has 3 letters"},
		}},
	}
}

// asking is the state recorded after a first step whose call a waits for
// a person's decision.
func asking() agentloop.State {
	calls := []llm.ToolCall{{ID: "a", Name: "lookup", Arguments: `{"word":"banana"}`}}
	return agentloop.State{
		Messages: []llm.Message{user, {Role: llm.RoleAssistant, ToolCalls: calls}},
		Step:     1,
		Waiting:  &agentloop.Waiting{Calls: calls, Done: map[string]llm.Message{}, Approvals: []string{"a"}},
	}
}

var errLeaseLost = errors.New("lease lost")

func TestRun(t *testing.T) {
	t.Parallel()

	type testCase struct {
		name string
		// tools are the names of the tools offered; nil offers every tool.
		tools []string
		// limits default to ten steps.
		limits *agentloop.Limits
		// state defaults to a fresh run of user.
		state *agentloop.State
		// cancel cancels the run's context before it starts.
		cancel error
		script []turn
		host   func(h *fakeHost)
		// policy is the agent's tool policy by tool name.
		policy map[string]string

		wantFinal   string
		wantFailure *agentloop.Failure
		wantErr     func(t *testing.T, err error)
		wantRecords []string
		// wantReports, when set, is everything the host was told, in order.
		wantReports []string
		wantCalls   int
		// wantLastRequest, when set, is the conversation of the model's last call.
		wantLastRequest []string
		wantState       func(t *testing.T, s agentloop.State)
	}

	banana := `{"word":"banana"}`

	cases := []testCase{
		{
			name:        "an answer without tool calls ends the run",
			script:      []turn{answer("Banana has 6 letters.", 5)},
			wantFinal:   "Banana has 6 letters.",
			wantRecords: []string{`1 final "Banana has 6 letters."`},
			wantCalls:   1,
			wantState: func(t *testing.T, s agentloop.State) {
				require.Equal(t, 1, s.Step)
				require.Equal(t, llm.Usage{InputTokens: 5, OutputTokens: 5}, s.Usage)
				require.Equal(t, &agentloop.Ending{Final: "Banana has 6 letters."}, s.Ended)
				require.Len(t, s.Messages, 2)
				require.Equal(t, llm.RoleAssistant, s.Messages[1].Role)
			},
		},
		{
			name: "tool calls are announced, run, and answered in call order",
			script: []turn{
				calling("Looking.", 3, "a:lookup:"+banana, "b:refuse:{}", "c:lookup:{\"word\":\"fig\"}"),
				answer("Banana has 6, fig 3.", 4),
			},
			wantFinal: "Banana has 6, fig 3.",
			wantRecords: []string{
				`1 "Looking." calls a:lookup b:refuse c:lookup -> a="banana has 6 letters" b=!"not allowed" c="fig has 3 letters"`,
				`2 final "Banana has 6, fig 3."`,
			},
			wantReports: []string{"tool_calls a,b,c", "call a", "call b", "call c", "step 1", "step 2"},
			wantCalls:   2,
			wantLastRequest: []string{
				"user: How long is banana?", "assistant: Looking. [a:lookup b:refuse c:lookup]",
				"tool a: banana has 6 letters", "tool b (error): not allowed", "tool c: fig has 3 letters",
			},
			wantState: func(t *testing.T, s agentloop.State) {
				require.Equal(t, 2, s.Step)
				require.Equal(t, llm.Usage{InputTokens: 7, OutputTokens: 7}, s.Usage)
			},
		},
		{
			name:   "a call of an unknown tool is an error result the model reads",
			tools:  []string{"lookup"},
			script: []turn{calling("", 1, "x:search:{}"), answer("Sorry.", 1)},
			wantRecords: []string{
				`1 "" calls x:search -> x=!"there is no tool \"search\"; the tools are: lookup"`,
				`2 final "Sorry."`,
			},
			wantFinal: "Sorry.",
			wantCalls: 2,
		},
		{
			name:   "bad arguments are an error result the model reads",
			script: []turn{calling("", 1, `a:lookup:{"letter":"b"}`), answer("Oops.", 1)},
			wantRecords: []string{
				`1 "" calls a:lookup -> a=!"invalid arguments: json: unknown field \"letter\""`,
				`2 final "Oops."`,
			},
			wantFinal: "Oops.",
			wantCalls: 2,
		},
		{
			name:   "a tool's own failure stops the run unrecorded",
			script: []turn{calling("", 1, "a:lookup:"+banana, "b:broken:{}"), answer("never", 1)},
			wantErr: func(t *testing.T, err error) {
				require.ErrorIs(t, err, errToolBroken)
				require.ErrorContains(t, err, "tool broken")
			},
			wantReports: []string{"tool_calls a,b", "call a", "call b"},
			wantCalls:   1,
		},
		{
			name:   "a panicking tool stops the run unrecorded",
			script: []turn{calling("", 1, "a:panics:{}")},
			wantErr: func(t *testing.T, err error) {
				require.EqualError(t, err, "tool panics panicked: boom")
			},
			wantReports: []string{"tool_calls a", "call a"},
			wantCalls:   1,
		},
		{
			name:    "a host that refuses the tool calls stops the run before they run",
			script:  []turn{calling("", 1, "a:lookup:"+banana)},
			host:    func(h *fakeHost) { h.toolCallsErr = errLeaseLost },
			wantErr: func(t *testing.T, err error) { require.ErrorIs(t, err, errLeaseLost) },
			// No "call a": the tool never ran.
			wantReports: []string{"tool_calls a"},
			wantCalls:   1,
		},
		{
			name:   "the step limit fails the run after its last step",
			limits: &agentloop.Limits{MaxSteps: 2},
			script: []turn{
				calling("", 1, "a:lookup:"+banana), calling("", 1, "b:lookup:"+banana), answer("never", 1),
			},
			wantFailure: &agentloop.Failure{Code: agentloop.CodeLimit, Message: "the run reached its limit of 2 steps"},
			wantRecords: []string{
				`1 "" calls a:lookup -> a="banana has 6 letters"`,
				`2 "" calls b:lookup -> b="banana has 6 letters"`,
			},
			wantCalls: 2,
			wantState: func(t *testing.T, s agentloop.State) {
				require.Equal(t, 2, s.Step)
				require.Nil(t, s.Ended)
			},
		},
		{
			name:   "the token limit fails the run once the steps used it up",
			limits: &agentloop.Limits{MaxSteps: 10, MaxTokens: 50},
			script: []turn{
				calling("", 15, "a:lookup:"+banana), calling("", 15, "b:lookup:"+banana), answer("never", 1),
			},
			wantFailure: &agentloop.Failure{Code: agentloop.CodeLimit, Message: "the run reached its limit of 50 tokens"},
			wantRecords: []string{
				`1 "" calls a:lookup -> a="banana has 6 letters"`,
				`2 "" calls b:lookup -> b="banana has 6 letters"`,
			},
			wantCalls: 2,
		},
		{
			name:        "a run past its deadline fails without calling the model",
			limits:      &agentloop.Limits{MaxSteps: 10, Deadline: t0, Now: func() time.Time { return t0 }},
			script:      []turn{answer("never", 1)},
			wantFailure: &agentloop.Failure{Code: agentloop.CodeLimit, Message: "the run reached its time limit"},
			wantCalls:   0,
		},
		{
			name: "a model call cut by the deadline fails the run",
			limits: &agentloop.Limits{MaxSteps: 10, Deadline: t0,
				Now: func() time.Time { return t0.Add(-time.Nanosecond) }},
			script:      []turn{{Deltas: []string{"Thinking"}, Block: true}},
			wantFailure: &agentloop.Failure{Code: agentloop.CodeLimit, Message: "the run reached its time limit"},
			wantCalls:   1,
		},
		{
			name:        "a run resumed from a checkpoint continues after its last step",
			state:       ptr(checkpoint()),
			script:      []turn{answer("Banana has 6 letters.", 5)},
			wantFinal:   "Banana has 6 letters.",
			wantRecords: []string{`2 final "Banana has 6 letters."`},
			wantCalls:   1,
			wantLastRequest: []string{
				"user: How long is banana?", "assistant: Looking. [a:lookup]", "tool a: banana has 6 letters",
			},
			wantState: func(t *testing.T, s agentloop.State) {
				require.Equal(t, 2, s.Step)
				require.Equal(t, llm.Usage{InputTokens: 15, OutputTokens: 15}, s.Usage, "usage counts the steps before the checkpoint")
			},
		},
		{
			name:        "a run resumed at its step limit fails without calling the model",
			limits:      &agentloop.Limits{MaxSteps: 1},
			state:       ptr(checkpoint()),
			script:      []turn{answer("never", 1)},
			wantFailure: &agentloop.Failure{Code: agentloop.CodeLimit, Message: "the run reached its limit of 1 steps"},
			wantCalls:   0,
		},
		{
			name: "a run resumed after its ending step ends as it did",
			state: func() *agentloop.State {
				s := checkpoint()
				s.Ended = &agentloop.Ending{Final: "Banana has 6 letters."}
				return &s
			}(),
			script:    []turn{answer("never", 1)},
			wantFinal: "Banana has 6 letters.",
			wantCalls: 0,
		},
		{
			name: "a run resumed after a filtered answer fails as it did",
			state: func() *agentloop.State {
				s := checkpoint()
				s.Ended = &agentloop.Ending{Final: "partial", Failure: &agentloop.Failure{Code: agentloop.CodeModel, Message: "filtered"}}
				return &s
			}(),
			wantFinal:   "partial",
			wantFailure: &agentloop.Failure{Code: agentloop.CodeModel, Message: "filtered"},
			wantCalls:   0,
		},
		{
			name: "an answer the vendor filtered fails the run",
			script: []turn{{Deltas: []string{"I can"}, Resp: llm.Response{
				Message: llm.Message{Text: "I can"}, FinishReason: llm.FinishContentFilter}}},
			wantFinal:   "I can",
			wantFailure: &agentloop.Failure{Code: agentloop.CodeModel, Message: "the model's vendor filtered the answer"},
			wantRecords: []string{`1 final "I can"`},
			wantCalls:   1,
			wantState: func(t *testing.T, s agentloop.State) {
				require.NotNil(t, s.Ended)
				require.Equal(t, agentloop.CodeModel, s.Ended.Failure.Code, "a resumed run fails the same way")
			},
		},
		{
			name:   "a model answer svc cannot read fails the run with a general message, the cause kept for the log",
			script: []turn{{Err: errors.New("model answered nonsense")}},
			wantFailure: &agentloop.Failure{Code: agentloop.CodeModel,
				Message: "the model's answer could not be read (the cause is logged with the run's id)",
				Cause:   errors.New("model answered nonsense")},
			wantCalls: 1,
		},
		{
			name:   "a vendor error without Retry-After fails the run",
			script: []turn{{Err: &llm.Error{API: "chat_completions", StatusCode: 400, Message: "unknown model", Attempts: 1}}},
			wantFailure: &agentloop.Failure{Code: agentloop.CodeModel,
				Message: "llm: chat_completions: HTTP 400: unknown model"},
			wantCalls: 1,
		},
		{
			name: "a vendor's Retry-After gives the run back to retry later",
			script: []turn{{Err: &llm.Error{API: "messages", StatusCode: 429, Retryable: true,
				RetryAfter: 90 * time.Second, Attempts: 3}}},
			wantErr: func(t *testing.T, err error) {
				var rl *agentloop.RetryLaterError
				require.ErrorAs(t, err, &rl)
				require.Equal(t, 90*time.Second, rl.Delay)
				var le *llm.Error
				require.ErrorAs(t, err, &le, "the vendor's error is kept")
				require.Equal(t, 429, le.StatusCode)
			},
			wantCalls: 1,
		},
		{
			name:   "a cancelled run stops with its cause, unrecorded",
			cancel: errors.New("worker draining"),
			script: []turn{{Block: true}},
			wantErr: func(t *testing.T, err error) {
				require.EqualError(t, err, "worker draining")
			},
			wantCalls: 1,
		},
		{
			name:    "a host that stops the loop gets ErrStopped after its last recorded step",
			host:    func(h *fakeHost) { h.allow = 1 },
			script:  []turn{calling("", 1, "a:lookup:"+banana), answer("never", 1)},
			wantErr: func(t *testing.T, err error) { require.ErrorIs(t, err, agentloop.ErrStopped) },
			wantRecords: []string{
				`1 "" calls a:lookup -> a="banana has 6 letters"`,
			},
			wantCalls: 1,
			wantState: func(t *testing.T, s agentloop.State) { require.Equal(t, 1, s.Step) },
		},
		{
			name:      "a host that refuses a step stops the run with its error",
			host:      func(h *fakeHost) { h.stepErr = errLeaseLost },
			script:    []turn{answer("Done.", 1)},
			wantErr:   func(t *testing.T, err error) { require.ErrorIs(t, err, errLeaseLost) },
			wantCalls: 1,
		},
		{
			name:   "a pending call records the step and suspends the run",
			script: []turn{calling("Asking.", 1, `a:lookup:{"word":"fig"}`, "b:later:{}", "c:later:{}"), answer("never", 1)},
			wantErr: func(t *testing.T, err error) {
				var se *agentloop.SuspendError
				require.ErrorAs(t, err, &se)
				require.Equal(t, []string{"b", "c"}, se.Calls)
			},
			wantRecords: []string{`1 "Asking." calls a:lookup b:later c:later -> waiting`},
			wantReports: []string{"tool_calls a,b,c", "call a", "call b", "call c", "step 1"},
			wantCalls:   1,
			wantState: func(t *testing.T, s agentloop.State) {
				require.Len(t, s.Messages, 2, "no tool message is added before every call is answered")
				require.NotNil(t, s.Waiting)
				require.Len(t, s.Waiting.Calls, 3)
				require.Equal(t, map[string]llm.Message{"a": {Role: llm.RoleTool, ToolCallID: "a", Text: "fig has 3 letters"}}, s.Waiting.Done)
			},
		},
		{
			name:  "a waiting run resumed with its answers records them in call order and goes on",
			state: ptr(waiting()),
			host: func(h *fakeHost) {
				h.answers = map[string]tool.Result{"b": {Text: "the subagent says hi"}}
			},
			script: []turn{answer("Done.", 1)},
			wantRecords: []string{
				`1 resumed -> a="fig has 3 letters" b="the subagent says hi"`,
				`2 final "Done."`,
			},
			wantFinal: "Done.",
			wantCalls: 1,
			wantLastRequest: []string{
				"user: How long is banana?", "assistant: Asking. [a:lookup b:later]",
				"tool a: fig has 3 letters", "tool b: the subagent says hi",
			},
			wantState: func(t *testing.T, s agentloop.State) { require.Nil(t, s.Waiting) },
		},
		{
			name:   "a waiting run resumed before its answers came suspends again",
			state:  ptr(waiting()),
			host:   func(h *fakeHost) { h.answers = map[string]tool.Result{} },
			script: []turn{answer("never", 1)},
			wantErr: func(t *testing.T, err error) {
				var se *agentloop.SuspendError
				require.ErrorAs(t, err, &se)
				require.Equal(t, []string{"b"}, se.Calls)
			},
			wantCalls: 0,
			wantState: func(t *testing.T, s agentloop.State) {
				require.NotNil(t, s.Waiting, "the run still waits")
				require.Len(t, s.Messages, 2)
			},
		},
		{
			name:   "a denied tool is never called and the model is told",
			policy: map[string]string{"lookup": agentloop.PolicyDeny},
			script: []turn{calling("", 1, "a:lookup:"+banana), answer("Denied.", 1)},
			wantRecords: []string{
				`1 "" calls a:lookup -> a=!"the call was not run: the agent's tool policy denies the tool \"lookup\""`,
				`2 final "Denied."`,
			},
			wantReports: []string{"tool_calls a", "step 1", "step 2"},
			wantFinal:   "Denied.",
			wantCalls:   2,
		},
		{
			name:   "a call that asks for a person suspends the run while the step's other calls run",
			policy: map[string]string{"lookup": agentloop.PolicyAsk},
			script: []turn{calling("", 1, "a:lookup:"+banana, "b:refuse:{}"), answer("never", 1)},
			wantErr: func(t *testing.T, err error) {
				var se *agentloop.SuspendError
				require.ErrorAs(t, err, &se)
				require.Equal(t, []string{"a"}, se.Calls)
				require.Len(t, se.Approvals, 1)
				require.Equal(t, "lookup", se.Approvals[0].Name)
				require.Equal(t, time.Hour, se.Terms.Timeout)
			},
			wantRecords: []string{`1 "" calls a:lookup b:refuse -> waiting`},
			wantReports: []string{"tool_calls a,b", "call b", "step 1"},
			wantCalls:   1,
			wantState: func(t *testing.T, s agentloop.State) {
				require.Equal(t, []string{"a"}, s.Waiting.Approvals)
				require.Contains(t, s.Waiting.Done, "b")
			},
		},
		{
			name:   "an approved call runs when the run continues",
			policy: map[string]string{"lookup": agentloop.PolicyAsk},
			state:  ptr(asking()),
			host: func(h *fakeHost) {
				h.decisions = map[string]agentloop.Decision{"a": {Approved: true}}
			},
			script:      []turn{answer("Done.", 1)},
			wantRecords: []string{`1 resumed -> a="banana has 6 letters"`, `2 final "Done."`},
			wantReports: []string{"decisions a", "call a", "step 1", "step 2"},
			wantFinal:   "Done.",
			wantCalls:   1,
		},
		{
			name:   "a denied call is answered with the reason",
			policy: map[string]string{"lookup": agentloop.PolicyAsk},
			state:  ptr(asking()),
			host: func(h *fakeHost) {
				h.decisions = map[string]agentloop.Decision{"a": {Reason: "denied: not today"}}
			},
			script:      []turn{answer("Done.", 1)},
			wantRecords: []string{`1 resumed -> a=!"denied: not today"`, `2 final "Done."`},
			wantReports: []string{"decisions a", "step 1", "step 2"},
			wantFinal:   "Done.",
			wantCalls:   1,
		},
		{
			name:   "an approved call runs and is checkpointed while another call still waits",
			policy: map[string]string{"lookup": agentloop.PolicyAsk},
			state: ptr(func() agentloop.State {
				s := asking()
				s.Waiting.Calls = append(s.Waiting.Calls, llm.ToolCall{ID: "c", Name: "later", Arguments: `{}`})
				return s
			}()),
			host: func(h *fakeHost) {
				h.decisions = map[string]agentloop.Decision{"a": {Approved: true}}
				h.answers = map[string]tool.Result{}
			},
			script: []turn{answer("never", 1)},
			wantErr: func(t *testing.T, err error) {
				var se *agentloop.SuspendError
				require.ErrorAs(t, err, &se)
				require.Equal(t, []string{"c"}, se.Calls)
				require.Empty(t, se.Approvals)
			},
			wantRecords: []string{`1 resumed -> waiting`},
			wantCalls:   0,
			wantState: func(t *testing.T, s agentloop.State) {
				require.Empty(t, s.Waiting.Approvals)
				require.Equal(t, "banana has 6 letters", s.Waiting.Done["a"].Text)
			},
		},
		{
			name:      "a waiting run whose answers cannot be read stops with the error",
			state:     ptr(waiting()),
			host:      func(h *fakeHost) { h.awaitErr = errLeaseLost },
			wantErr:   func(t *testing.T, err error) { require.ErrorIs(t, err, errLeaseLost) },
			wantCalls: 0,
		},
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHost()
			if tc.host != nil {
				tc.host(h)
			}
			model := &scriptedModel{turns: tc.script}
			spec := agentloop.Spec{Model: model, ModelName: "scripted-1", System: "Be brief.",
				Tools: toolsOf(h, tc.tools), Limits: withClock(agentloop.Limits{MaxSteps: 10}), ToolParallelism: 1,
				Policy: tc.policy, Approval: agentloop.ApprovalTerms{Timeout: time.Hour, OnTimeout: "deny"}}
			if tc.limits != nil {
				spec.Limits = withClock(*tc.limits)
			}
			state := agentloop.State{Messages: []llm.Message{user}}
			if tc.state != nil {
				state = *tc.state
			}
			ctx := t.Context()
			if tc.cancel != nil {
				var cancel context.CancelCauseFunc
				ctx, cancel = context.WithCancelCause(ctx)
				cancel(tc.cancel)
			}

			out, err := agentloop.Run(ctx, spec, state, h)

			if tc.wantErr != nil {
				require.Error(t, err)
				tc.wantErr(t, err)
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, tc.wantFinal, out.Final)
			require.Equal(t, tc.wantFailure, out.Failure)
			require.Equal(t, tc.wantRecords, orNil(h.records()))
			if tc.wantReports != nil {
				require.Equal(t, tc.wantReports, h.reports())
			}
			reqs := model.requests()
			require.Len(t, reqs, tc.wantCalls, "model calls")
			if tc.wantLastRequest != nil {
				require.Equal(t, tc.wantLastRequest, conversation(reqs[len(reqs)-1].Messages))
			}
			if tc.wantState != nil {
				tc.wantState(t, out.State)
			}
			if n := len(h.steps); n > 0 {
				require.Equal(t, out.State, h.steps[n-1].State, "the last checkpoint is the state the run ended in")
			}
		})
	}
}

func TestRunOutputLimit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		bound llm.Bound
		want  string
	}{
		{llm.BoundAnswer, "the model's answer exceeded 1000 bytes (limits.model_output_bytes)"},
		{llm.BoundTokens, fmt.Sprintf("the model's answer exceeded 1000 bytes, more than its max_output_tokens setting of 100 allows at %d bytes a token", llm.BytesPerToken)},
		{llm.BoundToolArguments, "a tool call's arguments exceeded 1000 bytes (limits.tool_arguments_bytes)"},
		{llm.BoundEvent, "one event of the model's stream exceeded 1000 bytes (twice limits.model_output_bytes and 64 KiB)"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.bound), func(t *testing.T) {
			t.Parallel()
			h := newHost()
			model := &scriptedModel{turns: []turn{{Deltas: []string{"aaaa"},
				Err: fmt.Errorf("stream: %w", &llm.OutputLimitError{API: "chat_completions", Bound: tc.bound, Limit: 1000, MaxTokens: 100})}}}
			out, err := agentloop.Run(t.Context(), agentloop.Spec{Model: model, ModelName: "m", Limits: withClock(agentloop.Limits{MaxSteps: 3})},
				agentloop.State{Messages: []llm.Message{user}}, h)
			require.NoError(t, err)
			require.Equal(t, &agentloop.Failure{Code: agentloop.CodeOutputLimit,
				Message: tc.want + "; the stream was stopped there and the model was not asked again"}, out.Failure)
			require.Empty(t, h.records())
			require.Len(t, model.requests(), 1, "the model is not asked again")
		})
	}
}

// The request carries the spec's model, instructions, tool definitions and
// bounds; streamed text reaches the host as it comes, empty pieces left out.
func TestRunRequestAndDeltas(t *testing.T) {
	t.Parallel()
	h := newHost()
	temp := 0.2
	model := &scriptedModel{turns: []turn{{Deltas: []string{"Ba", "", "nana."},
		Resp: llm.Response{Message: llm.Message{Text: "Banana."}, FinishReason: llm.FinishStop}}}}
	spec := agentloop.Spec{Model: model, ModelName: "scripted-1", System: "Be brief.", Tools: toolsOf(h, []string{"lookup", "later"}),
		Limits: withClock(agentloop.Limits{MaxSteps: 1}), MaxOutputTokens: 256, Temperature: &temp, MaxOutputBytes: 4096, MaxToolArgumentBytes: 512}

	out, err := agentloop.Run(t.Context(), spec, agentloop.State{Messages: []llm.Message{user}}, h)
	require.NoError(t, err)
	require.Equal(t, "Banana.", out.Final)
	require.Equal(t, []string{"Ba", "nana."}, h.deltas)

	reqs := model.requests()
	require.Len(t, reqs, 1)
	req := reqs[0]
	require.Equal(t, "scripted-1", req.Model)
	require.Equal(t, "Be brief.", req.System)
	require.Equal(t, []string{"lookup", "later"}, []string{req.Tools[0].Name, req.Tools[1].Name})
	require.Equal(t, 256, req.MaxOutputTokens)
	require.Equal(t, &temp, req.Temperature)
	require.Equal(t, 4096, req.MaxOutputBytes)
	require.Equal(t, 512, req.MaxToolArgumentBytes)
	require.NoError(t, req.Validate())
}

// Tool calls of one step run at once, up to ToolParallelism, and their
// results are recorded in the order of the calls, not of their completion:
// here the first call can only finish after the second, which can only
// start its work once the first is running.
func TestRunToolsInParallelKeepCallOrder(t *testing.T) {
	t.Parallel()
	h := newHost()
	slowStarted, fastDone := make(chan struct{}), make(chan struct{})
	wait := func(ctx context.Context, c <-chan struct{}) error {
		select {
		case <-c:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	slow := tool.Tool{Def: llm.Tool{Name: "slow"}, Call: func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
		close(slowStarted)
		if err := wait(ctx, fastDone); err != nil {
			return tool.Result{}, err
		}
		return tool.Result{Text: "slow done"}, nil
	}}
	fast := tool.Tool{Def: llm.Tool{Name: "fast"}, Call: func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
		defer close(fastDone)
		if err := wait(ctx, slowStarted); err != nil {
			return tool.Result{}, err
		}
		return tool.Result{Text: "fast done"}, nil
	}}
	model := &scriptedModel{turns: []turn{calling("", 1, "s:slow:{}", "f:fast:{}"), answer("Both done.", 1)}}
	// Were the calls run one at a time, they would wait for each other until this ends.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	out, err := agentloop.Run(ctx, agentloop.Spec{Model: model, ModelName: "m", Tools: []tool.Tool{slow, fast},
		Limits: withClock(agentloop.Limits{MaxSteps: 5}), ToolParallelism: 2}, agentloop.State{Messages: []llm.Message{user}}, h)
	require.NoError(t, err)
	require.Equal(t, "Both done.", out.Final)
	require.Equal(t, []string{`1 "" calls s:slow f:fast -> s="slow done" f="fast done"`, `2 final "Both done."`}, h.records())
}

// t0 is the tests' clock.
var t0 = time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)

// withClock puts l on the fixed clock t0 and, when l has no deadline, gives
// the run an hour. (Every run has a deadline: the worker derives it from the
// run's timeout. Each model call is bounded by it.)
func withClock(l agentloop.Limits) agentloop.Limits {
	if l.Now == nil {
		l.Now = func() time.Time { return t0 }
	}
	if l.Deadline.IsZero() {
		l.Deadline = t0.Add(time.Hour)
	}
	return l
}

// toolsOf returns the test tools named, every one when names is nil.
func toolsOf(h *fakeHost, names []string) []tool.Tool {
	all := []tool.Tool{lookupTool(h), refusingTool(h), brokenTool(h), panickingTool(h), laterTool(h)}
	if names == nil {
		return all
	}
	var out []tool.Tool
	for _, n := range names {
		for _, t := range all {
			if t.Def.Name == n {
				out = append(out, t)
			}
		}
	}
	return out
}

// conversation describes messages one line each, as the model reads them.
func conversation(msgs []llm.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		switch m.Role {
		case llm.RoleTool:
			mark := ""
			if m.IsError {
				mark = " (error)"
			}
			out[i] = fmt.Sprintf("tool %s%s: %s", m.ToolCallID, mark, m.Text)
		case llm.RoleAssistant:
			var calls []string
			for _, c := range m.ToolCalls {
				calls = append(calls, c.ID+":"+c.Name)
			}
			out[i] = fmt.Sprintf("assistant: %s [%s]", m.Text, strings.Join(calls, " "))
			out[i] = strings.TrimSuffix(out[i], " []")
		default:
			out[i] = fmt.Sprintf("%s: %s", m.Role, m.Text)
		}
	}
	return out
}

func orNil(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func ptr[T any](v T) *T { return &v }
