package worker

import (
	"context"
	"errors"

	"github.com/svcdev/svc/internal/contool"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/tool"
)

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
