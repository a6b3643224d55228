package tracing

import (
	"fmt"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// NewSampler decides which traces are recorded: a span with a parent (a
// client's traceparent, a run's origin, a span of the same process) is
// recorded when its parent was; a root span linked to another trace (the
// later attempts of a run, which start traces of their own) is recorded
// when the trace it links to was; any other root is recorded with
// probability ratio. A run is thereby recorded whole or not at all.
func NewSampler(ratio float64) sdktrace.Sampler {
	return sdktrace.ParentBased(linkedSampler{ratio: sdktrace.TraceIDRatioBased(ratio)})
}

// linkedSampler is the root sampler of NewSampler.
type linkedSampler struct{ ratio sdktrace.Sampler }

func (s linkedSampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	for _, l := range p.Links {
		if !l.SpanContext.IsValid() {
			continue
		}
		d := sdktrace.Drop
		if l.SpanContext.IsSampled() {
			d = sdktrace.RecordAndSample
		}
		return sdktrace.SamplingResult{Decision: d, Tracestate: trace.SpanContextFromContext(p.ParentContext).TraceState()}
	}
	return s.ratio.ShouldSample(p)
}

func (s linkedSampler) Description() string {
	return fmt.Sprintf("LinkedOr{%s}", s.ratio.Description())
}
