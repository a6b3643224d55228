package llm

import (
	"context"
	"errors"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// genAISystem is the older name of gen_ai.provider.name, which trace
// backends that predate it still read.
const genAISystem = attribute.Key("gen_ai.system")

// Traced wraps m so that every call is a client span of tracer named "chat
// MODEL", with the attributes of the OpenTelemetry GenAI semantic
// conventions: the provider, the operation, the requested model and output
// bound, the tokens counted and the finish reason. Neither the messages nor
// the answer are recorded. providerType is the provider's type
// (catalog id); a nil tracer answers m.
func Traced(m Model, tracer trace.Tracer, providerType string) Model {
	if tracer == nil {
		return m
	}
	return tracedModel{m: m, tracer: tracer, provider: GenAIProvider(providerType)}
}

type tracedModel struct {
	m        Model
	tracer   trace.Tracer
	provider string
}

func (t tracedModel) Stream(ctx context.Context, req Request, fn func(Event) error) (Response, error) {
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameChat,
		semconv.GenAIProviderNameKey.String(t.provider),
		genAISystem.String(t.provider),
		semconv.GenAIRequestModel(req.Model),
	}
	if req.MaxOutputTokens > 0 {
		attrs = append(attrs, semconv.GenAIRequestMaxTokens(req.MaxOutputTokens))
	}
	ctx, span := t.tracer.Start(ctx, "chat "+req.Model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	defer span.End()
	resp, err := t.m.Stream(ctx, req, fn)
	span.SetAttributes(
		semconv.GenAIUsageInputTokens(resp.Usage.InputTokens),
		semconv.GenAIUsageOutputTokens(resp.Usage.OutputTokens),
		attribute.Int("svc.llm.requests", resp.Attempts),
	)
	if resp.FinishReason != "" {
		span.SetAttributes(semconv.GenAIResponseFinishReasons(string(resp.FinishReason)))
	}
	if err != nil {
		typ, status := errorType(err)
		span.SetAttributes(semconv.ErrorTypeKey.String(typ))
		if status > 0 {
			span.SetAttributes(semconv.HTTPResponseStatusCode(status))
		}
		// The error's text may quote the vendor, who may quote the prompt.
		span.SetStatus(codes.Error, typ)
	}
	return resp, err
}

// errorType classifies a model call's error for error.type, with the
// vendor's HTTP status when it answered one.
func errorType(err error) (string, int) {
	var le *Error
	var ol *OutputLimitError
	var cl *ContextLengthError
	switch {
	case errors.As(err, &ol):
		return "output_limit", 0
	case errors.As(err, &cl):
		return "context_length", 0
	case errors.Is(err, context.Canceled):
		return "canceled", 0
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout", 0
	case errors.Is(err, ErrStreamCut):
		return "stream_cut", 0
	case errors.As(err, &le):
		if le.Type != "" && len(le.Type) <= 64 {
			return le.Type, le.StatusCode
		}
		if le.StatusCode > 0 {
			return strconv.Itoa(le.StatusCode), le.StatusCode
		}
		return "vendor_error", 0
	}
	return semconv.ErrorTypeOther.Value.AsString(), 0
}

// GenAIProvider is gen_ai.provider.name for a provider type: the
// convention's name where it has one, else the type itself.
func GenAIProvider(providerType string) string {
	switch providerType {
	case "openai":
		return semconv.GenAIProviderNameOpenAI.Value.AsString()
	case "azure_openai":
		return semconv.GenAIProviderNameAzureAIOpenAI.Value.AsString()
	case "anthropic", "claude_subscription":
		return semconv.GenAIProviderNameAnthropic.Value.AsString()
	case "aws_bedrock":
		return semconv.GenAIProviderNameAWSBedrock.Value.AsString()
	case "google_gemini":
		return semconv.GenAIProviderNameGCPGemini.Value.AsString()
	case "google_vertex":
		return semconv.GenAIProviderNameGCPVertexAI.Value.AsString()
	case "cohere":
		return semconv.GenAIProviderNameCohere.Value.AsString()
	case "deepseek":
		return semconv.GenAIProviderNameDeepseek.Value.AsString()
	case "groq":
		return semconv.GenAIProviderNameGroq.Value.AsString()
	case "mistral":
		return semconv.GenAIProviderNameMistralAI.Value.AsString()
	case "perplexity":
		return semconv.GenAIProviderNamePerplexity.Value.AsString()
	case "xai":
		return semconv.GenAIProviderNameXAI.Value.AsString()
	}
	return providerType
}
