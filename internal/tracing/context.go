package tracing

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// maxTraceState bounds the tracestate kept with a run; a longer one is
// dropped (the trace goes on without it).
const maxTraceState = 512

// Origin is a W3C trace context as a run keeps it: the traceparent and
// tracestate header values of the span that caused the run. Nil fields
// when there was none (tracing was off).
type Origin struct {
	TraceParent *string
	TraceState  *string
}

// OriginOf is the trace context of ctx's span: what a run started within
// ctx continues. Empty when ctx holds no span context.
func OriginOf(ctx context.Context) Origin {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return Origin{}
	}
	c := propagation.MapCarrier{}
	propagator.Inject(ctx, c)
	var o Origin
	if tp := c["traceparent"]; tp != "" {
		o.TraceParent = &tp
	}
	if ts := c["tracestate"]; ts != "" && len(ts) <= maxTraceState && o.TraceParent != nil {
		o.TraceState = &ts
	}
	return o
}

// SpanContext is the remote span context o names; invalid when o is empty
// or malformed.
func (o Origin) SpanContext() trace.SpanContext {
	if o.TraceParent == nil {
		return trace.SpanContext{}
	}
	c := propagation.MapCarrier{"traceparent": *o.TraceParent}
	if o.TraceState != nil {
		c["tracestate"] = *o.TraceState
	}
	return trace.SpanContextFromContext(propagator.Extract(context.Background(), c))
}
