package run

import (
	"context"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/tracing"
)

// traced is an input posted within ctx: it keeps the trace context of
// ctx's span (the request's, or the tool call's that starts a subagent),
// which the input's run continues whenever it starts
// (docs/decisions/0059-tracing.md).
func traced(ctx context.Context, p db.InputInsertParams) db.InputInsertParams {
	o := tracing.OriginOf(ctx)
	p.Traceparent, p.Tracestate = o.TraceParent, o.TraceState
	return p
}
