// Package subagent is the subagent toolset: one tool per subagent an
// agent's configuration names. A call starts a child run of that agent (its
// default revision now) on a thread of its own, and the parent waits for its
// answer, which comes back through a subagent_result outbox delivery; the
// parent's attempt gives its slot up while it waits
// (docs/decisions/0037-delegation-bounds-run-deadline-and-stray-checkpoints.md).
package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/svcdev/svc/internal/agent"
	"github.com/svcdev/svc/internal/llm"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/tool"
)

// Deps are what the subagent toolset reads and calls through.
type Deps struct {
	// Agents answer the subagents' names and descriptions.
	Agents *agent.Service
	// Runs start the child runs.
	Runs *run.Service
	// Limits bound delegation per root run (worker.subagent_max_depth,
	// worker.subagent_max_live_children, worker.subagent_max_descendants).
	Limits run.SubagentLimits
}

// Toolset builds the subagent tools of runs.
type Toolset struct{ d Deps }

// New returns the subagent toolset.
func New(d Deps) *Toolset { return &Toolset{d: d} }

var _ tool.Toolset = (*Toolset)(nil).ForRun

// taskParams is the JSON Schema of a subagent tool's arguments.
var taskParams = json.RawMessage(`{"type":"object","properties":{"task":{"type":"string","description":"What the agent should do, with all the context it needs."}},"required":["task"],"additionalProperties":false}`)

// ForRun offers one tool per subagent of the agent that still exists (an
// archived one included), named after it. A delegation beyond the limits is
// refused: the model sees a tool error naming the limit, and no run starts.
func (t *Toolset) ForRun(ctx context.Context, rc tool.RunContext) ([]tool.Tool, error) {
	if len(rc.Config.Subagents) == 0 {
		return nil, nil
	}
	ids := make([]string, len(rc.Config.Subagents))
	for i, sa := range rc.Config.Subagents {
		ids[i] = sa.AgentID
	}
	heads, err := t.d.Agents.Heads(ctx, rc.Run.WorkspaceID, ids)
	if err != nil {
		return nil, err
	}
	var out []tool.Tool
	used := map[string]bool{}
	for _, sa := range rc.Config.Subagents {
		head, ok := heads[sa.AgentID]
		if !ok {
			continue
		}
		desc := fmt.Sprintf("Delegates a task to the agent %q and answers its final reply.", head.Name)
		if head.Description != "" {
			desc += " " + head.Description
		}
		out = append(out, tool.Tool{
			Def:  llm.Tool{Name: tool.Name("agent_", head.Name, used), Description: desc, Parameters: taskParams},
			Call: t.delegate(rc.Lease, sa.AgentID), Toolset: agent.ToolsetSubagent,
		})
	}
	return out, nil
}

// delegate is the call of the tool of subagent agentID: it starts the child
// run for the task, and the step waits for its answer.
func (t *Toolset) delegate(parent run.Lease, agentID string) func(context.Context, json.RawMessage) (tool.Result, error) {
	return func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
		var in struct {
			Task string `json:"task"`
		}
		if res, ok := tool.Decode(args, &in); !ok {
			return res, nil
		}
		childID, err := t.d.Runs.StartChild(ctx, parent, tool.CallID(ctx), agentID, in.Task, t.d.Limits)
		var refused *run.ChildRefused
		if errors.As(err, &refused) {
			return tool.Errorf("the agent cannot take the task: %s", refused.Reason), nil
		}
		if err != nil {
			return tool.Result{}, err
		}
		return tool.Result{Text: "started run " + childID, Pending: true}, nil
	}
}
