package outbox_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/outbox"
	"github.com/svcdev/svc/internal/testdb"
)

// TestDeliverySpans: with a tracer, each attempt is a span of its own
// naming the kind, the delivery and the attempt, with its result; a
// failure is an error by result, without the error's text; the deliverer
// runs under the span.
func TestDeliverySpans(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	ids := enqueue(t, pool, 2)
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	var inside sync.Map
	e := newEngine(pool, outboxConfig(config.OutboxOverride{}), "replica-a", outbox.DelivererFunc(func(ctx context.Context, c outbox.Claimed) outbox.Outcome {
		inside.Store(c.ID, trace.SpanContextFromContext(ctx).SpanID())
		if c.ID == ids[1] {
			return outbox.Outcome{Err: errors.New("receiver said secret-payload"), StatusCode: 500}
		}
		return outbox.Delivered()
	}))
	e.Tracer = tp.Tracer("test")
	require.NoError(t, e.Deliver(t.Context()))

	byID := map[string]tracetest.SpanStub{}
	for _, s := range spans.GetSpans() {
		require.Equal(t, "outbox.deliver "+kind, s.Name)
		require.False(t, s.Parent.IsValid(), "a delivery is a trace of its own")
		attrs := map[string]any{}
		for _, kv := range s.Attributes {
			attrs[string(kv.Key)] = kv.Value.AsInterface()
			require.NotContains(t, kv.Value.Emit(), "secret")
		}
		require.Equal(t, kind, attrs["svc.outbox.kind"])
		require.Equal(t, int64(1), attrs["svc.outbox.attempt"])
		id := attrs["svc.outbox.delivery_id"].(string)
		byID[id] = s
		under, _ := inside.Load(id)
		require.Equal(t, s.SpanContext.SpanID(), under, "the deliverer runs under its attempt's span")
	}
	require.Len(t, byID, 2)
	ok, failed := byID[ids[0]], byID[ids[1]]
	require.Equal(t, codes.Unset, ok.Status.Code)
	require.Contains(t, ok.Attributes, attribute.String("svc.outbox.result", "delivered"))
	require.Equal(t, codes.Error, failed.Status.Code)
	require.Equal(t, outbox.StatusPending, failed.Status.Description)
	require.Contains(t, failed.Attributes, attribute.String("svc.outbox.result", "failed"))
	require.Contains(t, failed.Attributes, attribute.Int("http.response.status_code", 500))
}
