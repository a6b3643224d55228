package agentloop

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// stepSpans makes a span per step of the loop, "run.step", when the spec
// has a tracer: the step's model call, its tool calls and the host's
// record of the step are its children.
type stepSpans struct {
	tracer trace.Tracer
	span   trace.Span
}

// start ends the previous step's span, if open, and starts step n's,
// answering ctx with it. resumed marks the step that completes a step
// which waited for answers.
func (s *stepSpans) start(ctx context.Context, n int, resumed bool) context.Context {
	s.end(Outcome{}, nil)
	if s.tracer == nil {
		return ctx
	}
	ctx, s.span = s.tracer.Start(ctx, "run.step", trace.WithAttributes(
		attribute.Int("svc.run.step", n), attribute.Bool("svc.run.step_resumed", resumed)))
	return ctx
}

// end ends the open step's span with how the loop left it: a failure of
// the run is an error (its code, never its message), waiting for answers
// or stopping between steps is not.
func (s *stepSpans) end(out Outcome, err error) {
	if s.span == nil {
		return
	}
	span := s.span
	s.span = nil
	defer span.End()
	var se *SuspendError
	var rl *RetryLaterError
	switch {
	case err == nil && out.Failure != nil:
		span.SetAttributes(semconv.ErrorTypeKey.String(out.Failure.Code))
		span.SetStatus(codes.Error, out.Failure.Code)
	case err == nil, errors.Is(err, ErrStopped):
	case errors.As(err, &se):
		span.SetAttributes(attribute.Int("svc.run.waiting_calls", len(se.Calls)))
	case errors.As(err, &rl):
		span.SetAttributes(semconv.ErrorTypeKey.String("retry_later"))
		span.SetStatus(codes.Error, "retry_later")
	case errors.Is(err, context.Canceled):
		span.SetAttributes(semconv.ErrorTypeKey.String("canceled"))
		span.SetStatus(codes.Error, "canceled")
	default:
		span.SetAttributes(semconv.ErrorTypeKey.String("internal"))
		span.SetStatus(codes.Error, "internal")
	}
}
