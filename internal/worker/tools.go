package worker

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/svcdev/svc/internal/contool"
	"github.com/svcdev/svc/internal/memtool"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/tool"
)

// MemoryToolset offers memory_search, memory_read and memory_write over the
// agent's memories; records written carry the run's id.
func MemoryToolset(ts *memtool.Toolset) tool.Toolset {
	return func(ctx context.Context, rc tool.RunContext) ([]tool.Tool, error) {
		if len(rc.Config.Memories) == 0 {
			return nil, nil
		}
		ids := make([]string, len(rc.Config.Memories))
		for i, m := range rc.Config.Memories {
			ids[i] = m.MemoryID
		}
		tools, err := ts.Tools(ctx, rc.Run.WorkspaceID, ids)
		if err != nil {
			return nil, err
		}
		opts := memtool.CallOptions{RunID: rc.Run.ID}
		for i := range tools {
			call := tools[i].Call
			tools[i].Call = func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
				return call(memtool.WithCallOptions(ctx, opts), args)
			}
		}
		return tools, nil
	}
}

// MemoryPrompt is the memories' context of the system prompt: the agent's
// memories, how to use them, and the records of each that a search for the
// run's input finds (memtool.Toolset.Context).
func MemoryPrompt(ts *memtool.Toolset) tool.PromptSection {
	return func(ctx context.Context, rc tool.RunContext, input string) (string, error) {
		if len(rc.Config.Memories) == 0 {
			return "", nil
		}
		ids := make([]string, len(rc.Config.Memories))
		for i, m := range rc.Config.Memories {
			ids[i] = m.MemoryID
		}
		return ts.Context(ctx, rc.Run.WorkspaceID, ids, input)
	}
}

// ConnectionToolset offers the actions of the agent's connections. A
// connection that cannot be used when the attempt starts (disabled, revoked,
// gone) fails the run, as a disabled model does; Composio out of reach is a
// failure of the attempt, retried.
func ConnectionToolset(ts *contool.Toolset) tool.Toolset {
	return func(ctx context.Context, rc tool.RunContext) ([]tool.Tool, error) {
		if len(rc.Config.Tools.Connections) == 0 {
			return nil, nil
		}
		tools, err := ts.Tools(ctx, rc.Run.WorkspaceID, rc.Config.Tools.Connections)
		if ce, ok := errors.AsType[*contool.Error](err); ok && !ce.Transient {
			return nil, &run.Failure{Code: ce.Code, Message: ce.Msg}
		}
		return tools, err
	}
}
