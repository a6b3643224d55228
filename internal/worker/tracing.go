package worker

import (
	"context"
	"encoding/json"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/svcdev/svc/internal/agentloop"
	"github.com/svcdev/svc/internal/llm"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/tool"
)

// traceAttempt starts the attempt's span, "run.attempt", when the worker
// has a tracer. A run's first attempt is a child of the run's origin (the
// request or the tool call that started it); a later one (after a crash,
// a hand-off, or a wait for a person or a subagent) starts a trace of its
// own, linked to the origin, so that no trace lasts as long as a run may
// wait (docs/decisions/0059-tracing.md).
func traceAttempt(ctx context.Context, tracer trace.Tracer, c run.Claimed) (context.Context, trace.Span) {
	if tracer == nil {
		return ctx, nil
	}
	r := c.Run
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameInvokeAgent,
		semconv.GenAIAgentID(r.AgentID),
		attribute.String("svc.run.id", r.ID),
		attribute.String("svc.thread.id", r.ThreadID),
		attribute.String("svc.workspace.id", r.WorkspaceID),
		attribute.String("svc.agent.revision_id", r.RevisionID),
		attribute.Int("svc.run.attempt", int(c.Lease.Number)),
		attribute.Int("svc.run.from_step", int(r.Step)),
	}
	if r.ParentRunID != nil {
		attrs = append(attrs, attribute.String("svc.run.parent_id", *r.ParentRunID))
	}
	opts := []trace.SpanStartOption{trace.WithAttributes(attrs...)}
	origin := c.Origin.SpanContext()
	switch {
	case origin.IsValid() && c.FirstAttempt:
		ctx = trace.ContextWithRemoteSpanContext(ctx, origin)
	case origin.IsValid():
		opts = append(opts, trace.WithNewRoot(), trace.WithLinks(trace.Link{SpanContext: origin,
			Attributes: []attribute.KeyValue{attribute.String("svc.link", "run_origin")}}))
	}
	return tracer.Start(ctx, "run.attempt", opts...)
}

// endAttemptSpan ends the attempt's span with how the attempt ended: a
// run that failed, or an attempt that failed, is an error (its code);
// waiting, handing off and cancelling are not.
func endAttemptSpan(span trace.Span, out agentloop.Outcome, err, cause error) {
	if span == nil {
		return
	}
	defer span.End()
	var ending string
	var se *agentloop.SuspendError
	var rl *agentloop.RetryLaterError
	var f *run.Failure
	switch {
	case errors.Is(err, run.ErrLeaseLost) || errors.Is(cause, errLeaseLost):
		ending = "lease_lost"
	case errors.Is(cause, errCancelRequested):
		ending = "cancelled"
	case errors.Is(err, agentloop.ErrStopped) || errors.Is(cause, errDrained):
		ending = "handed_off"
	case errors.As(err, &se):
		ending = "waiting"
	case errors.As(err, &rl):
		ending = "retry_later"
	case errors.As(err, &f):
		ending = "failed"
		span.SetStatus(codes.Error, f.Code)
		span.SetAttributes(semconv.ErrorTypeKey.String(f.Code))
	case err != nil:
		ending = "retried"
		span.SetStatus(codes.Error, "internal")
		span.SetAttributes(semconv.ErrorTypeKey.String("internal"))
	case out.Failure != nil:
		ending = "failed"
		span.SetStatus(codes.Error, out.Failure.Code)
		span.SetAttributes(semconv.ErrorTypeKey.String(out.Failure.Code))
	default:
		ending = "succeeded"
	}
	span.SetAttributes(attribute.String("svc.attempt.ending", ending),
		semconv.GenAIUsageInputTokens(out.State.Usage.InputTokens),
		semconv.GenAIUsageOutputTokens(out.State.Usage.OutputTokens))
}

// traceTools wraps each tool's Call so that every call is a span,
// "execute_tool NAME", with the GenAI tool attributes and the toolset; the
// arguments and the result are not recorded. A nil tracer answers tools.
func traceTools(tools []tool.Tool, tracer trace.Tracer) []tool.Tool {
	if tracer == nil {
		return tools
	}
	out := make([]tool.Tool, len(tools))
	for i, t := range tools {
		call := t.Call
		name, toolset := t.Def.Name, t.Toolset
		t.Call = func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
			ctx, span := tracer.Start(ctx, "execute_tool "+name, trace.WithAttributes(
				semconv.GenAIOperationNameExecuteTool,
				semconv.GenAIToolName(name),
				semconv.GenAIToolCallID(tool.CallID(ctx)),
				semconv.GenAIToolType("function"),
				attribute.String("svc.toolset", toolset),
			))
			defer span.End()
			res, err := call(ctx, args)
			switch {
			case err != nil:
				typ := "internal"
				if errors.Is(err, context.Canceled) {
					typ = "canceled"
				}
				span.SetAttributes(semconv.ErrorTypeKey.String(typ))
				span.SetStatus(codes.Error, typ)
			case res.IsError:
				// The model reads why; the span says only that it failed.
				span.SetAttributes(semconv.ErrorTypeKey.String("tool_error"))
				span.SetStatus(codes.Error, "tool_error")
			case res.Pending:
				span.SetAttributes(attribute.Bool("svc.tool.pending", true))
			}
			return res, err
		}
		out[i] = t
	}
	return out
}

// traceModel wraps the run's model in a span per call (llm.Traced).
func traceModel(m llm.Model, tracer trace.Tracer, providerType string) llm.Model {
	return llm.Traced(m, tracer, providerType)
}
