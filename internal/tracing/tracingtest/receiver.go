// Package tracingtest is an OTLP collector for tests: it accepts trace
// exports over OTLP/HTTP (protobuf, gzipped or not) and OTLP/gRPC, as a
// collector does, and keeps the spans for assertions; and a span processor
// that tells when spans have ended, so a test flushes once they have
// rather than waiting for a while.
package tracingtest

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	// The gRPC exporter compresses with gzip.
	_ "google.golang.org/grpc/encoding/gzip"
)

// Span is a received span, ids in lowercase hex.
type Span struct {
	TraceID      string
	SpanID       string
	ParentSpanID string
	Name         string
	// Kind is "internal", "server", "client", "producer" or "consumer".
	Kind       string
	Scope      string
	Attributes map[string]any
	Resource   map[string]any
	// Status is "unset", "ok" or "error".
	Status        string
	StatusMessage string
	Links         []Link
	// Events are the names of the span's events.
	Events []string
}

// Link is a received span link.
type Link struct {
	TraceID string
	SpanID  string
}

// Receiver records what exporters send it.
type Receiver struct {
	// URL is the base URL for tracing.otlp_endpoint (OTLP/HTTP), or
	// http://host:port for the gRPC receiver.
	URL string

	mu      sync.Mutex
	spans   []Span
	headers []http.Header
}

// NewReceiver starts an OTLP/HTTP receiver on loopback, stopped when the
// test ends. It answers 200 to a valid export on /v1/traces and 400 to
// anything else.
func NewReceiver(t testing.TB) *Receiver {
	t.Helper()
	r := &Receiver{}
	srv := httptest.NewServer(http.HandlerFunc(r.serveHTTP))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// NewGRPCReceiver starts an OTLP/gRPC receiver on loopback, stopped when
// the test ends.
func NewGRPCReceiver(t testing.TB) *Receiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	r := &Receiver{URL: "http://" + ln.Addr().String()}
	srv := grpc.NewServer()
	collectorpb.RegisterTraceServiceServer(srv, grpcService{r: r})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return r
}

func (r *Receiver) serveHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "not an OTLP/HTTP protobuf trace export", http.StatusBadRequest)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		defer gz.Close()
		body = gz
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var export collectorpb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &export); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.record(req.Header.Clone(), &export)
	out, _ := proto.Marshal(&collectorpb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

type grpcService struct {
	collectorpb.UnimplementedTraceServiceServer
	r *Receiver
}

func (s grpcService) Export(ctx context.Context, req *collectorpb.ExportTraceServiceRequest) (*collectorpb.ExportTraceServiceResponse, error) {
	h := http.Header{}
	md, _ := metadata.FromIncomingContext(ctx)
	for k, vs := range md {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	s.r.record(h, req)
	return &collectorpb.ExportTraceServiceResponse{}, nil
}

func (r *Receiver) record(h http.Header, export *collectorpb.ExportTraceServiceRequest) {
	var got []Span
	for _, rs := range export.GetResourceSpans() {
		res := attributes(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := Span{
					TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentSpanID: hex.EncodeToString(s.GetParentSpanId()), Name: s.GetName(), Kind: kind(s.GetKind()),
					Scope: ss.GetScope().GetName(), Attributes: attributes(s.GetAttributes()), Resource: res,
					Status: status(s.GetStatus().GetCode()), StatusMessage: s.GetStatus().GetMessage(),
				}
				for _, l := range s.GetLinks() {
					sp.Links = append(sp.Links, Link{TraceID: hex.EncodeToString(l.GetTraceId()), SpanID: hex.EncodeToString(l.GetSpanId())})
				}
				for _, e := range s.GetEvents() {
					sp.Events = append(sp.Events, e.GetName())
				}
				got = append(got, sp)
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.spans = append(r.spans, got...)
	r.headers = append(r.headers, h)
}

// Spans are the spans received so far, in the order they came.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Named are the spans received so far that are called name.
func (r *Receiver) Named(name string) []Span {
	var out []Span
	for _, s := range r.Spans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// Exports are the headers of every export received, in order.
func (r *Receiver) Exports() []http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]http.Header(nil), r.headers...)
}

func attributes(kvs []*commonpb.KeyValue) map[string]any {
	out := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		out[kv.GetKey()] = value(kv.GetValue())
	}
	return out
}

func value(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_ArrayValue:
		var out []any
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, value(e))
		}
		return out
	case *commonpb.AnyValue_BytesValue:
		return x.BytesValue
	}
	return nil
}

func kind(k tracepb.Span_SpanKind) string {
	switch k {
	case tracepb.Span_SPAN_KIND_SERVER:
		return "server"
	case tracepb.Span_SPAN_KIND_CLIENT:
		return "client"
	case tracepb.Span_SPAN_KIND_PRODUCER:
		return "producer"
	case tracepb.Span_SPAN_KIND_CONSUMER:
		return "consumer"
	}
	return "internal"
}

func status(c tracepb.Status_StatusCode) string {
	switch c {
	case tracepb.Status_STATUS_CODE_OK:
		return "ok"
	case tracepb.Status_STATUS_CODE_ERROR:
		return "error"
	}
	return "unset"
}

// Ended is a span processor that counts the spans that ended, by name,
// and tells a waiting test.
type Ended struct {
	mu      sync.Mutex
	counts  map[string]int
	changed chan struct{}
}

// WatchEnded registers an Ended on tp.
func WatchEnded(tp *sdktrace.TracerProvider) *Ended {
	e := &Ended{counts: map[string]int{}, changed: make(chan struct{})}
	tp.RegisterSpanProcessor(e)
	return e
}

// Wait returns once n spans called name have ended, or ctx's error.
func (e *Ended) Wait(ctx context.Context, name string, n int) error {
	for {
		e.mu.Lock()
		got, changed := e.counts[name], e.changed
		e.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// OnStart implements sdktrace.SpanProcessor.
func (e *Ended) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd implements sdktrace.SpanProcessor.
func (e *Ended) OnEnd(s sdktrace.ReadOnlySpan) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.counts[s.Name()]++
	close(e.changed)
	e.changed = make(chan struct{})
}

// Shutdown implements sdktrace.SpanProcessor.
func (e *Ended) Shutdown(context.Context) error { return nil }

// ForceFlush implements sdktrace.SpanProcessor.
func (e *Ended) ForceFlush(context.Context) error { return nil }
