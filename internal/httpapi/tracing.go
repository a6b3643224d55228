package httpapi

import (
	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// traceRoute names the request's span (made by tracing.Provider.Handler)
// after its method and route template, "POST /api/v1/runs", never the path
// with its ids, and adds the request id. It runs outermost, so the route and
// the error handler's verdict are known when it names the span; a request
// no route matched keeps the method alone. Without a recording span it
// does nothing.
func traceRoute(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := next(c)
		span := trace.SpanFromContext(c.Request().Context())
		if !span.IsRecording() {
			return err
		}
		span.SetAttributes(attribute.String("svc.request_id", c.Response().Header().Get(echo.HeaderXRequestID)))
		if route := routeLabel(c); route != "unmatched" {
			span.SetName(c.Request().Method + " " + route)
			span.SetAttributes(semconv.HTTPRoute(route))
		}
		return err
	}
}
