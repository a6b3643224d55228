package outbox

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// traceAttempt starts the span of one delivery attempt, "outbox.deliver
// KIND", when the engine has a tracer; each attempt is a trace of its own.
// The payload is not recorded.
func (e *Engine) traceAttempt(ctx context.Context, c Claimed) (context.Context, trace.Span) {
	if e.Tracer == nil {
		return ctx, nil
	}
	attrs := []attribute.KeyValue{
		attribute.String("svc.outbox.kind", c.Kind),
		attribute.String("svc.outbox.delivery_id", c.ID),
		attribute.Int("svc.outbox.attempt", c.Attempt),
	}
	if c.WorkspaceID != "" {
		attrs = append(attrs, attribute.String("svc.workspace.id", c.WorkspaceID))
	}
	if c.SubscriptionID != "" {
		attrs = append(attrs, attribute.String("svc.subscription.id", c.SubscriptionID),
			attribute.String("svc.webhook.event_type", c.EventType))
	}
	return e.Tracer.Start(ctx, "outbox.deliver "+c.Kind, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
}

// endAttemptSpan ends an attempt's span with what its settlement says:
// its result and the receiver's status; a failure is an error, by result
// (the error's text, which may quote the receiver, is not recorded).
func endAttemptSpan(span trace.Span, s settlement) {
	if span == nil {
		return
	}
	defer span.End()
	result := s.result
	if !s.charged {
		result = "given_back"
	}
	span.SetAttributes(attribute.String("svc.outbox.result", result), attribute.String("svc.outbox.status", s.status))
	if s.statusCode > 0 {
		span.SetAttributes(semconv.HTTPResponseStatusCode(s.statusCode))
	}
	if s.result == "failed" {
		span.SetAttributes(semconv.ErrorTypeKey.String(s.status))
		span.SetStatus(codes.Error, s.status)
	}
}
