// Package tracing is svc's OpenTelemetry tracing: the process's tracer
// provider and OTLP exporter (tracing.* keys), the W3C trace context a run
// keeps from the request that started it, and the instrumentation of the
// HTTP server, the PostgreSQL pool and the Redis client
// (docs/decisions/0059-tracing.md).
//
// Tracing is off unless tracing.otlp_endpoint is set. Off, a Provider has no
// exporter and no SDK: Tracer answers nil, which every instrumented package
// takes as "make no spans", and Handler, PoolTracer and InstrumentRedis leave
// what they are given as it is.
//
// Spans carry ids (run, thread, workspace, agent, delivery), names of
// operations, tools and models, counts and status codes, never prompts,
// tool arguments or results, or error texts that a vendor or a tenant wrote.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/svcdev/svc/internal/config"
)

// Process names the process in its spans' resource.
type Process struct {
	// Version is the build's version (service.version).
	Version string
	// Role is the process's role (svc.role).
	Role string
	// ReplicaID is the process's replica id (service.instance.id).
	ReplicaID string
}

// Provider is one process's tracing, on or off.
type Provider struct {
	sdk *sdktrace.TracerProvider // nil when off
}

// Off is a Provider that records nothing.
func Off() *Provider { return &Provider{} }

// New builds the process's tracing from cfg: off when cfg.OTLPEndpoint is
// empty; else a tracer provider that samples as decision 0059 says and
// exports in batches of ended spans to the collector. Nothing connects
// before the first export. Export failures are logged to log.
func New(cfg config.Tracing, p Process, log *slog.Logger) (*Provider, error) {
	if cfg.OTLPEndpoint == "" {
		return Off(), nil
	}
	exp, err := newExporter(cfg)
	if err != nil {
		return nil, err
	}
	res := resource.NewWithAttributes(semconv.SchemaURL,
		semconv.ServiceName(cfg.ServiceName),
		semconv.ServiceVersion(p.Version),
		semconv.ServiceInstanceID(p.ReplicaID),
		attribute.String("svc.role", p.Role),
	)
	batch := min(512, cfg.QueueSize)
	sdk := sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithSampler(NewSampler(cfg.SampleRatio)),
		sdktrace.WithBatcher(exp,
			sdktrace.WithMaxQueueSize(cfg.QueueSize),
			sdktrace.WithMaxExportBatchSize(batch),
			sdktrace.WithExportTimeout(cfg.ExportTimeout),
		),
	)
	// The SDK reports failed exports (and dropped spans) to the global
	// handler, one per process.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("tracing: export failed; the spans are dropped", "error", err.Error())
	}))
	return &Provider{sdk: sdk}, nil
}

// newExporter builds the OTLP exporter of cfg. The endpoint's scheme says
// whether it speaks TLS.
func newExporter(cfg config.Tracing) (sdktrace.SpanExporter, error) {
	u, err := url.Parse(cfg.OTLPEndpoint)
	if err != nil {
		return nil, errors.New("tracing.otlp_endpoint is not a URL")
	}
	headers := make(map[string]string, len(cfg.Headers))
	for _, h := range cfg.Headers {
		name, value, _ := strings.Cut(h, "=")
		headers[strings.TrimSpace(name)] = strings.TrimSpace(value)
	}
	ctx := context.Background()
	switch cfg.Protocol {
	case "grpc":
		opts := []otlptracegrpc.Option{
			otlptracegrpc.WithEndpoint(u.Host),
			otlptracegrpc.WithTimeout(cfg.ExportTimeout),
			otlptracegrpc.WithHeaders(headers),
			otlptracegrpc.WithCompressor("gzip"),
		}
		if u.Scheme == "http" {
			opts = append(opts, otlptracegrpc.WithInsecure())
		}
		return otlptracegrpc.New(ctx, opts...)
	default:
		path := u.Path
		if path == "" || path == "/" {
			path = "/v1/traces"
		}
		opts := []otlptracehttp.Option{
			otlptracehttp.WithEndpoint(u.Host),
			otlptracehttp.WithURLPath(path),
			otlptracehttp.WithTimeout(cfg.ExportTimeout),
			otlptracehttp.WithHeaders(headers),
			otlptracehttp.WithCompression(otlptracehttp.GzipCompression),
		}
		if u.Scheme == "http" {
			opts = append(opts, otlptracehttp.WithInsecure())
		}
		exp, err := otlptracehttp.New(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
		}
		return exp, nil
	}
}

// Enabled says whether tracing is on.
func (p *Provider) Enabled() bool { return p.sdk != nil }

// Tracer is the tracer of an instrumented package (its import path), or
// nil when tracing is off.
func (p *Provider) Tracer(name string) trace.Tracer {
	if p.sdk == nil {
		return nil
	}
	return p.sdk.Tracer(name)
}

// SDK is the SDK's tracer provider, nil when tracing is off. Tests register
// span processors on it to learn that a span ended.
func (p *Provider) SDK() *sdktrace.TracerProvider { return p.sdk }

// propagator reads and writes W3C traceparent and tracestate only: no
// baggage, which a client could fill with attributes.
var propagator = propagation.TraceContext{}

// Handler wraps the process's HTTP handler so that each request is a span,
// the child of the client's traceparent when it sent one. The span is named
// by its method; the API's router renames it after the route template
// (httpapi's traceRoute). The probes are not traced. Off, h is answered.
func (p *Provider) Handler(h http.Handler) http.Handler {
	if p.sdk == nil {
		return h
	}
	return otelhttp.NewHandler(h, "http.server",
		otelhttp.WithTracerProvider(p.sdk),
		otelhttp.WithPropagators(propagator),
		otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method }),
		otelhttp.WithFilter(func(r *http.Request) bool {
			return r.URL.Path != "/healthz" && r.URL.Path != "/readyz"
		}),
	)
}

// PoolTracer traces the queries made within a traced operation (a request,
// an attempt, a delivery), each span named after its sqlc query, without
// the statement's text or parameters. Nil when tracing is off.
func (p *Provider) PoolTracer() pgx.QueryTracer {
	if p.sdk == nil {
		return nil
	}
	return otelpgx.NewTracer(
		otelpgx.WithTracerProvider(p.sdk),
		otelpgx.WithMeterProvider(metricnoop.NewMeterProvider()),
		otelpgx.WithSpanNameCtxFunc(queryName),
		otelpgx.WithDisableSQLStatementInAttributes(),
		otelpgx.WithDisableAcquireTracer(),
	)
}

// queryName is a query's sqlc name (its "-- name: X :one" line), else its
// first word (SELECT, BEGIN...).
func queryName(ctx context.Context, sql string) string {
	for line := range strings.Lines(sql) {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "-- name:"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				return f[0]
			}
		}
		if !strings.HasPrefix(line, "--") && line != "" {
			break
		}
	}
	return otelpgx.SQLOperationName(ctx, sql)
}

// InstrumentRedis traces the commands of c made within a traced operation,
// each span named after its command, without its arguments (which hold
// events' content). Streams' blocking reads are left out. Off, it does
// nothing.
func (p *Provider) InstrumentRedis(c *redis.Client) error {
	if p.sdk == nil {
		return nil
	}
	return redisotel.InstrumentTracing(c,
		redisotel.WithTracerProvider(childOnly{p.sdk}),
		redisotel.WithDBStatement(false),
		redisotel.WithCallerEnabled(false),
		redisotel.WithDialFilter(true),
		redisotel.WithCommandFilter(func(cmd redis.Cmder) bool { return cmd.Name() == "xread" }),
	)
}

// ForceFlush exports every ended span now and waits for the export.
func (p *Provider) ForceFlush(ctx context.Context) error {
	if p.sdk == nil {
		return nil
	}
	return p.sdk.ForceFlush(ctx)
}

// Shutdown exports what is left, within ctx, and stops the exporter.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p.sdk == nil {
		return nil
	}
	return p.sdk.Shutdown(ctx)
}

// childOnly is a tracer provider whose tracers make spans only within a
// recording span: commands a process makes on its own (pings, a sweep's)
// start no trace of their own.
type childOnly struct{ trace.TracerProvider }

func (c childOnly) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return childOnlyTracer{c.TracerProvider.Tracer(name, opts...)}
}

type childOnlyTracer struct{ trace.Tracer }

func (t childOnlyTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if span := trace.SpanFromContext(ctx); !span.IsRecording() {
		return ctx, span
	}
	return t.Tracer.Start(ctx, name, opts...)
}
