package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/svcdev/svc/internal/agent"
	"github.com/svcdev/svc/internal/llm"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/tool"
)

// SubagentToolset offers one tool per subagent of the agent: a call starts a
// child run of that agent (its default revision now) on a thread of its own,
// and the parent waits for its answer, which comes back through a
// subagent_result outbox delivery. The parent's attempt gives its slot up
// while it waits. A delegation beyond lim is refused: the model sees a tool
// error naming the limit, and no run starts.
func SubagentToolset(agents *agent.Service, runs *run.Service, lim run.SubagentLimits) tool.Toolset {
	return func(ctx context.Context, rc tool.RunContext) ([]tool.Tool, error) {
		if len(rc.Config.Subagents) == 0 {
			return nil, nil
		}
		ids := make([]string, len(rc.Config.Subagents))
		for i, sa := range rc.Config.Subagents {
			ids[i] = sa.AgentID
		}
		heads, err := agents.Heads(ctx, rc.Run.WorkspaceID, ids)
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
			name := toolName("agent_", head.Name, used)
			desc := fmt.Sprintf("Delegates a task to the agent %q and answers its final reply.", head.Name)
			if head.Description != "" {
				desc += " " + head.Description
			}
			agentID := sa.AgentID
			out = append(out, tool.Tool{
				Def: llm.Tool{Name: name, Description: desc, Parameters: json.RawMessage(
					`{"type":"object","properties":{"task":{"type":"string","description":"What the agent should do, with all the context it needs."}},"required":["task"],"additionalProperties":false}`)},
				Call: func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
					var in struct {
						Task string `json:"task"`
					}
					if res, ok := tool.Decode(args, &in); !ok {
						return res, nil
					}
					childID, err := runs.StartChild(ctx, rc.Lease, tool.CallID(ctx), agentID, in.Task, lim)
					var refused *run.ChildRefused
					if errors.As(err, &refused) {
						return tool.Errorf("the agent cannot take the task: %s", refused.Reason), nil
					}
					if err != nil {
						return tool.Result{}, err
					}
					return tool.Result{Text: "started run " + childID, Pending: true}, nil
				},
			})
		}
		return out, nil
	}
}

var unsafeName = regexp.MustCompile(`[^a-z0-9_]+`)

// toolName makes a tool name of prefix and a display name: lowercase
// letters, digits and underscores, at most 64 characters, unique in used.
func toolName(prefix, display string, used map[string]bool) string {
	base := strings.Trim(unsafeName.ReplaceAllString(strings.ToLower(display), "_"), "_")
	if base == "" {
		base = "agent"
	}
	base = prefix + base
	if len(base) > 60 {
		base = base[:60]
	}
	name := base
	for i := 2; used[name]; i++ {
		name = fmt.Sprintf("%s_%d", base, i)
	}
	used[name] = true
	return name
}
