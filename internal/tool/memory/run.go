package memory

import (
	"context"
	"encoding/json"

	"github.com/svcdev/svc/internal/tool"
)

var (
	_ tool.Toolset       = (*Toolset)(nil).ForRun
	_ tool.PromptSection = (*Toolset)(nil).Prompt
)

// ForRun offers memory_search, memory_read and memory_write over the memories
// of the run's agent (Tools); none when it lists none. Records written carry
// the run's id.
func (t *Toolset) ForRun(ctx context.Context, rc tool.RunContext) ([]tool.Tool, error) {
	if len(rc.Config.Memories) == 0 {
		return nil, nil
	}
	tools, err := t.Tools(ctx, rc.Run.WorkspaceID, memoryIDs(rc))
	if err != nil {
		return nil, err
	}
	opts := CallOptions{RunID: rc.Run.ID}
	for i := range tools {
		call := tools[i].Call
		tools[i].Call = func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
			return call(WithCallOptions(ctx, opts), args)
		}
	}
	return tools, nil
}

// Prompt is the memories' part of the run's system prompt (Context): the
// agent's memories, how to use them, and the records of each that a search
// for the run's input finds.
func (t *Toolset) Prompt(ctx context.Context, rc tool.RunContext, input string) (string, error) {
	if len(rc.Config.Memories) == 0 {
		return "", nil
	}
	return t.Context(ctx, rc.Run.WorkspaceID, memoryIDs(rc), input)
}

// memoryIDs are the ids of the memories the run's agent lists.
func memoryIDs(rc tool.RunContext) []string {
	ids := make([]string, len(rc.Config.Memories))
	for i, m := range rc.Config.Memories {
		ids[i] = m.MemoryID
	}
	return ids
}
