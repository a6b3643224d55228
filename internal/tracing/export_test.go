package tracing

import (
	"context"

	"go.opentelemetry.io/otel/trace"
)

// QueryName is queryName for the tests.
func QueryName(sql string) string { return queryName(context.Background(), sql) }

// ChildOnly is childOnly for the tests.
func ChildOnly(tp trace.TracerProvider) trace.TracerProvider { return childOnly{tp} }
