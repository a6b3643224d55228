package run_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apitest"
	"github.com/svcdev/svc/internal/checkpoint"
	"github.com/svcdev/svc/internal/run"
)

// Every event a run writes, encoded as the events list and the stream send
// it, matches its type's own schema of the contract (openapi/openapi.yaml),
// and the contract lists exactly the types the code writes: the run's
// status as the service and the claim write it, a step's events with the
// data the worker gives them, a hand-off's and a lease's run.error, and
// a cancel.
func TestEventsMatchTheContract(t *testing.T) {
	t.Parallel()
	b := setup(t, 3)
	ctx := t.Context()
	r, err := b.svc.Start(ctx, b.caller, run.StartInput{AgentID: b.agentID, Input: "go"})
	require.NoError(t, err)
	claims, err := b.svc.Claim(ctx, "w1", 1, 30*time.Second)
	require.NoError(t, err)
	require.Len(t, claims, 1)
	key, err := checkpoint.Key(b.caller.WorkspaceID, r.ID, "step-1")
	require.NoError(t, err)
	kept := 1
	decider := b.caller.PrincipalID
	require.NoError(t, b.svc.Commit(ctx, claims[0].Lease, run.Step{Number: 1, CheckpointKey: key, Events: []run.NewEvent{
		{Type: run.EventContextCompacted, Data: run.ContextCompactedData{Strategy: "summarize", Summary: "Earlier: hello.",
			FromPosition: 1, ThroughPosition: 4, KeptPosition: &kept, ReplacedMessages: 3, SummarizedMessages: 3,
			TokensBefore: 900, TokensAfter: 300, SummaryTokens: 40}},
		{Type: run.EventMessageDelta, Data: run.DeltaData{Text: "Look"}},
		{Type: run.EventToolCall, Data: run.ToolCallData{CallID: "c1", Name: "run_command", Arguments: `{"command":"ls"}`}},
		{Type: run.EventMessageCompleted, Data: run.MessageData{Role: "assistant", Content: "Looking.",
			ToolCalls: []run.ToolCall{{ID: "c1", Name: "run_command", Arguments: `{"command":"ls"}`}}}},
		{Type: run.EventApprovalRequested, Data: run.ApprovalRequestedData{CallID: "c1", Name: "run_command",
			Arguments: `{"command":"ls"}`, TimeoutSeconds: 600, OnTimeout: "deny"}},
		{Type: run.EventApprovalDecided, Data: run.ApprovalDecidedData{CallID: "c1", Name: "run_command", Decision: "approve",
			DecidedBy: &decider}},
		{Type: run.EventToolResult, Data: run.ToolResultData{CallID: "c1", Name: "run_command", Content: "a.txt", IsError: false}},
	}}))
	require.NoError(t, b.svc.HandOff(ctx, claims[0].Lease, 0, 0, "worker draining"))
	_, err = b.svc.Cancel(ctx, b.caller, r.ID)
	require.NoError(t, err)

	schemas := apitest.Contract(t).Components.Schemas
	seen := map[string]bool{}
	for _, e := range b.events(t, r.ThreadID) {
		raw, err := json.Marshal(e)
		require.NoError(t, err)
		ref, ok := schemas["Event"].Value.Discriminator.Mapping[e.Type]
		require.True(t, ok, "the contract documents %s", e.Type)
		apitest.CheckSchema(t, "Event", raw)
		apitest.CheckSchema(t, strings.TrimPrefix(ref.Ref, "#/components/schemas/"), raw)
		seen[e.Type] = true
	}
	written := []string{run.EventRunStatus, run.EventMessageDelta, run.EventMessageCompleted, run.EventToolCall,
		run.EventToolResult, run.EventContextCompacted, run.EventApprovalRequested, run.EventApprovalDecided, run.EventError}
	for _, typ := range written {
		require.True(t, seen[typ], "a %s event was written and checked", typ)
	}
	var mapped []string
	for typ := range schemas["Event"].Value.Discriminator.Mapping {
		mapped = append(mapped, typ)
	}
	slices.Sort(written)
	slices.Sort(mapped)
	require.Equal(t, written, mapped, "Event has a schema for each")
}
