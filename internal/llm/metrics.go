package llm

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// CallDurationBuckets are the bounds, in seconds, of
// svc_model_call_duration_seconds: a whole streamed answer, from a short
// reply to a long reasoning one (docs/decisions/0058-metrics-and-run-logs.md).
var CallDurationBuckets = []float64{.25, .5, 1, 2, 4, 8, 15, 30, 60, 120, 300, 600}

// Results of a model call, as svc_model_calls_total's result label says.
const (
	ResultOK             = "ok"
	ResultRateLimited    = "rate_limited"    // HTTP 429
	ResultClientError    = "client_error"    // another HTTP 4xx (a bad key, a refused request)
	ResultServerError    = "server_error"    // HTTP 5xx
	ResultTransportError = "transport_error" // no answer, a cut stream or an error inside it
	ResultOutputLimit    = "output_limit"    // the answer passed a bound of svc's (OutputLimitError)
	ResultCancelled      = "cancelled"       // the caller's context ended (a cancel, a drain, the run's time)
	ResultError          = "error"           // anything else
)

// Metrics are the model calls' Prometheus collectors. Labels are the model
// API (chat_completions, messages...) and the provider type (openai,
// anthropic...): both come from the provider catalog, so their number is
// bounded whatever tenants configure; model names are never labels.
type Metrics struct {
	Duration *prometheus.HistogramVec
	Calls    *prometheus.CounterVec
	Tokens   *prometheus.CounterVec
}

// NewMetrics registers the model call collectors with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "svc_model_call_duration_seconds",
			Help:    "Duration of model calls, from the request to the end of the streamed answer (retries included), by model API and provider type.",
			Buckets: CallDurationBuckets,
		}, []string{"api", "provider_type"}),
		Calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_model_calls_total",
			Help: "Model calls, by model API, provider type and result (ok, rate_limited, client_error, server_error, transport_error, output_limit, cancelled, error).",
		}, []string{"api", "provider_type", "result"}),
		Tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_model_tokens_total",
			Help: "Tokens the vendors reported for model calls, by model API, provider type and type (input, output).",
		}, []string{"api", "provider_type", "type"}),
	}
	reg.MustRegister(m.Duration, m.Calls, m.Tokens)
	return m
}

// Instrument returns model measured under api and providerType; with nil
// metrics, model itself. The series are looked up once, here, not at each
// call.
func (m *Metrics) Instrument(model Model, api, providerType string) Model {
	if m == nil {
		return model
	}
	c := measured{Model: model, duration: m.Duration.WithLabelValues(api, providerType),
		input: m.Tokens.WithLabelValues(api, providerType, "input"), output: m.Tokens.WithLabelValues(api, providerType, "output"),
		calls: make(map[string]prometheus.Counter, len(callResults))}
	for _, r := range callResults {
		c.calls[r] = m.Calls.WithLabelValues(api, providerType, r)
	}
	return c
}

var callResults = []string{ResultOK, ResultRateLimited, ResultClientError, ResultServerError, ResultTransportError,
	ResultOutputLimit, ResultCancelled, ResultError}

// measured times and counts the calls of a Model.
type measured struct {
	Model
	duration      prometheus.Observer
	input, output prometheus.Counter
	calls         map[string]prometheus.Counter // by result; read only
}

// Stream implements Model.
func (c measured) Stream(ctx context.Context, req Request, fn func(Event) error) (Response, error) {
	start := time.Now()
	resp, err := c.Model.Stream(ctx, req, fn)
	c.duration.Observe(time.Since(start).Seconds())
	c.calls[CallResult(ctx, err)].Inc()
	if n := resp.Usage.InputTokens; n > 0 {
		c.input.Add(float64(n))
	}
	if n := resp.Usage.OutputTokens; n > 0 {
		c.output.Add(float64(n))
	}
	return resp, err
}

// CallResult classifies how a model call made under ctx ended with err.
func CallResult(ctx context.Context, err error) string {
	var le *Error
	var ol *OutputLimitError
	switch {
	case err == nil:
		return ResultOK
	case ctx.Err() != nil:
		return ResultCancelled
	case errors.As(err, &ol):
		return ResultOutputLimit
	case errors.As(err, &le) && le.StatusCode == http.StatusTooManyRequests:
		return ResultRateLimited
	case errors.As(err, &le) && le.StatusCode >= 500:
		return ResultServerError
	case errors.As(err, &le) && le.StatusCode >= 400:
		return ResultClientError
	case errors.As(err, &le):
		return ResultTransportError
	}
	return ResultError
}
