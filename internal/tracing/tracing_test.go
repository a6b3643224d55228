package tracing_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/tracing"
	"github.com/svcdev/svc/internal/tracing/tracingtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// start builds a Provider exporting to recv and shuts it down when the test
// ends.
func start(t *testing.T, recv *tracingtest.Receiver, edit func(*config.Tracing)) *tracing.Provider {
	t.Helper()
	cfg := config.Default().Tracing
	cfg.OTLPEndpoint = recv.URL
	if edit != nil {
		edit(&cfg)
	}
	cfgAll := config.Default()
	cfgAll.Tracing = cfg
	require.NoError(t, cfgAll.Validate())
	p, err := tracing.New(cfg, tracing.Process{Version: "v1.2.3", Role: "worker", ReplicaID: "rep_1"}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Shutdown(context.Background())) })
	return p
}

// TestExportsOverEitherProtocol: a span ends, a flush sends it to the
// collector over OTLP/HTTP or gRPC with the configured headers and the
// process's resource.
func TestExportsOverEitherProtocol(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		protocol string
		recv     func(testing.TB) *tracingtest.Receiver
	}{
		{"http/protobuf", tracingtest.NewReceiver},
		{"grpc", tracingtest.NewGRPCReceiver},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			t.Parallel()
			recv := tc.recv(t)
			p := start(t, recv, func(c *config.Tracing) {
				c.Protocol = tc.protocol
				c.ServiceName = "svc-test"
				c.Headers = []string{"x-collector-key = s3cret"}
			})
			require.True(t, p.Enabled())
			_, span := p.Tracer("test").Start(context.Background(), "work")
			span.End()
			require.NoError(t, p.ForceFlush(context.Background()))

			got := recv.Named("work")
			require.Len(t, got, 1)
			require.Equal(t, span.SpanContext().TraceID().String(), got[0].TraceID)
			require.Equal(t, "test", got[0].Scope)
			require.Equal(t, "svc-test", got[0].Resource["service.name"])
			require.Equal(t, "v1.2.3", got[0].Resource["service.version"])
			require.Equal(t, "rep_1", got[0].Resource["service.instance.id"])
			require.Equal(t, "worker", got[0].Resource["svc.role"])
			exports := recv.Exports()
			require.NotEmpty(t, exports)
			require.Equal(t, "s3cret", exports[0].Get("x-collector-key"))
		})
	}
}

// TestOffRecordsNothing: without an endpoint there is no SDK, no tracer,
// and what the provider wraps is left as it is.
func TestOffRecordsNothing(t *testing.T) {
	t.Parallel()
	p, err := tracing.New(config.Default().Tracing, tracing.Process{}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.False(t, p.Enabled())
	require.Nil(t, p.SDK())
	require.Nil(t, p.Tracer("test"))
	require.Nil(t, p.PoolTracer())
	h := http.NewServeMux()
	require.Same(t, h, p.Handler(h))
	require.NoError(t, p.InstrumentRedis(nil))
	require.NoError(t, p.ForceFlush(context.Background()))
	require.NoError(t, p.Shutdown(context.Background()))
}

// TestHandlerContinuesTheClientsTrace: a request with a traceparent is a
// server span of the client's trace, its parent the client's span; the
// probes make no span.
func TestHandlerContinuesTheClientsTrace(t *testing.T) {
	t.Parallel()
	recv := tracingtest.NewReceiver(t)
	p := start(t, recv, nil)
	var inside trace.SpanContext
	srv := httptest.NewServer(p.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/agents" {
			inside = trace.SpanContextFromContext(r.Context())
		}
		w.WriteHeader(http.StatusNoContent)
	})))
	defer srv.Close()

	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	for _, path := range []string{"/api/v1/agents", "/healthz", "/readyz"} {
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		require.NoError(t, err)
		req.Header.Set("traceparent", "00-"+traceID+"-"+parentID+"-01")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.NoError(t, resp.Body.Close())
	}
	require.NoError(t, p.ForceFlush(context.Background()))
	spans := recv.Spans()
	require.Len(t, spans, 1, "probes are not traced")
	require.Equal(t, "GET", spans[0].Name)
	require.Equal(t, "server", spans[0].Kind)
	require.Equal(t, traceID, spans[0].TraceID)
	require.Equal(t, parentID, spans[0].ParentSpanID)
	require.EqualValues(t, 204, spans[0].Attributes["http.response.status_code"])
	require.Equal(t, traceID, inside.TraceID().String())
}

// TestSampler: with a ratio of 0 no new trace is recorded, but a parent's
// or a linked trace's decision is followed either way.
func TestSampler(t *testing.T) {
	t.Parallel()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(tracing.NewSampler(0)))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tr := tp.Tracer("test")
	remote := func(sampled bool) trace.SpanContext {
		tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
		sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
		var flags trace.TraceFlags
		if sampled {
			flags = trace.FlagsSampled
		}
		return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags, Remote: true})
	}
	sampled := func(ctx context.Context, opts ...trace.SpanStartOption) bool {
		_, s := tr.Start(ctx, "x", opts...)
		defer s.End()
		return s.SpanContext().IsSampled()
	}
	bg := context.Background()
	require.False(t, sampled(bg), "a new trace at ratio 0")
	require.True(t, sampled(trace.ContextWithRemoteSpanContext(bg, remote(true))), "the parent sampled")
	require.False(t, sampled(trace.ContextWithRemoteSpanContext(bg, remote(false))), "the parent did not")
	require.True(t, sampled(bg, trace.WithLinks(trace.Link{SpanContext: remote(true)})), "the linked trace was sampled")
	require.False(t, sampled(bg, trace.WithLinks(trace.Link{SpanContext: remote(false)})), "the linked trace was not")

	all := sdktrace.NewTracerProvider(sdktrace.WithSampler(tracing.NewSampler(1)))
	t.Cleanup(func() { _ = all.Shutdown(context.Background()) })
	_, s := all.Tracer("test").Start(bg, "x")
	require.True(t, s.SpanContext().IsSampled(), "a new trace at ratio 1")
}

// TestOrigin: a span's W3C context survives being kept as text, and an
// empty or oversized part is left out.
func TestOrigin(t *testing.T) {
	t.Parallel()
	require.Equal(t, tracing.Origin{}, tracing.OriginOf(context.Background()))
	require.False(t, tracing.Origin{}.SpanContext().IsValid())

	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ts, err := trace.ParseTraceState("vendor=abc,other=1")
	require.NoError(t, err)
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: ts})
	o := tracing.OriginOf(trace.ContextWithSpanContext(context.Background(), sc))
	require.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", *o.TraceParent)
	require.Equal(t, "vendor=abc,other=1", *o.TraceState)
	back := o.SpanContext()
	require.True(t, back.IsRemote())
	require.Equal(t, sc.TraceID(), back.TraceID())
	require.Equal(t, sc.SpanID(), back.SpanID())
	require.True(t, back.IsSampled())
	require.Equal(t, "abc", back.TraceState().Get("vendor"))

	var members []string
	for i := range 30 {
		members = append(members, "k"+strings.Repeat("x", 10)+string(rune('a'+i%26))+string(rune('a'+i/26))+"="+strings.Repeat("v", 20))
	}
	long, err := trace.ParseTraceState(strings.Join(members, ","))
	require.NoError(t, err)
	o = tracing.OriginOf(trace.ContextWithSpanContext(context.Background(), sc.WithTraceState(long)))
	require.NotNil(t, o.TraceParent)
	require.Nil(t, o.TraceState, "a tracestate over 512 characters is dropped")

	bad := "00-zz-00f067aa0ba902b7-01"
	require.False(t, tracing.Origin{TraceParent: &bad}.SpanContext().IsValid())
}

// TestPoolTracerNamesQueries: a query span is named after its sqlc name.
func TestPoolTracerNamesQueries(t *testing.T) {
	t.Parallel()
	require.Equal(t, "RunClaim", tracing.QueryName("-- name: RunClaim :many\nWITH x AS (SELECT 1) SELECT 1"))
	require.Equal(t, "SELECT", tracing.QueryName("SELECT 1"))
	require.Equal(t, "BEGIN", tracing.QueryName("begin"))
}

// TestChildOnly: the Redis instrumentation's tracer makes no span outside
// a recording one.
func TestChildOnly(t *testing.T) {
	t.Parallel()
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tr := tracing.ChildOnly(tp).Tracer("test")
	_, s := tr.Start(context.Background(), "alone")
	require.False(t, s.IsRecording())
	ctx, parent := tp.Tracer("test").Start(context.Background(), "parent")
	defer parent.End()
	_, s = tr.Start(ctx, "child")
	defer s.End()
	require.True(t, s.IsRecording())
	require.Equal(t, parent.SpanContext().TraceID(), s.SpanContext().TraceID())
}

// TestExportFailureIsReported: a collector out of reach fails the flush
// (within tracing.export_timeout) and nothing waits on it afterwards.
func TestExportFailureIsReported(t *testing.T) {
	t.Parallel()
	cfg := config.Default().Tracing
	// A closed port: every export fails.
	srv := httptest.NewServer(http.NotFoundHandler())
	cfg.OTLPEndpoint = srv.URL
	srv.Close()
	cfg.ExportTimeout = 200 * time.Millisecond
	p, err := tracing.New(cfg, tracing.Process{}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	_, span := p.Tracer("test").Start(context.Background(), "lost")
	span.End()
	require.Error(t, p.ForceFlush(context.Background()))
	require.NoError(t, p.Shutdown(context.Background()))
}
