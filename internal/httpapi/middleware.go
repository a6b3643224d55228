package httpapi

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/oklog/ulid/v2"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/metrics"
	"github.com/svcdev/svc/internal/reqctx"
)

// validRequestID accepts 1 to 128 of A-Z a-z 0-9 . _ - ; anything else is replaced,
// so ids are safe to log and to echo in headers.
func validRequestID(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// requestID sets X-Request-Id before anything else runs, so every response has
// it: 404s, panics and errors included.
func requestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		id := req.Header.Get(echo.HeaderXRequestID)
		if !validRequestID(id) {
			id = ulid.Make().String()
		}
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		c.SetRequest(req.WithContext(reqctx.WithRequestID(req.Context(), id)))
		return next(c)
	}
}

// quietRoutes are probes, logged at debug level so that they do not flood the log.
var quietRoutes = map[string]bool{"/healthz": true, "/readyz": true}

// observe writes one log record and the metrics of every request, after the error
// handler ran, so the status is final; a stream of events is counted but not
// timed (eventStream). It records the route template, never the
// URL or the query string, which may hold secrets. It also turns panics into 500s.
func observe(log *slog.Logger, m *metrics.Metrics) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) (err error) {
			start := time.Now()
			defer func() {
				if r := recover(); r != nil {
					err = apperr.Wrap(apperr.KindInternal, "internal error", fmt.Errorf("panic: %v\n%s", r, debug.Stack()))
				}
				if err != nil {
					c.Error(err)
					err = nil
				}
				elapsed := time.Since(start)
				route := routeLabel(c)
				method := c.Request().Method
				status := c.Response().Status
				m.HTTPRequests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
				if !eventStream(c) {
					m.HTTPDuration.WithLabelValues(method, route).Observe(elapsed.Seconds())
				}

				level := slog.LevelInfo
				if quietRoutes[route] {
					level = slog.LevelDebug
				}
				if status >= 500 {
					level = slog.LevelError
				}
				if !log.Enabled(c.Request().Context(), level) {
					return
				}
				attrs := []slog.Attr{
					slog.String("method", method),
					slog.String("route", route),
					slog.Int("status", status),
					slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000),
					slog.String("request_id", c.Response().Header().Get(echo.HeaderXRequestID)),
				}
				if cause, ok := c.Get(causeKey).(error); ok && status >= 500 {
					attrs = append(attrs, slog.String("error", cause.Error()))
				} else if refused, ok := endpoint.Refusal(cause); ok {
					// The operator reads which key would allow the URL.
					attrs = append(attrs, slog.String("refused", refused))
				}
				log.LogAttrs(c.Request().Context(), level, "request", attrs...)
			}()
			return next(c)
		}
	}
}

// eventStream reports whether the answer was a stream of Server-Sent Events,
// which lasts as long as its client stays: its duration is no request
// latency, so it stays out of svc_http_request_duration_seconds (open
// streams are svc_stream_open).
func eventStream(c echo.Context) bool {
	return strings.HasPrefix(c.Response().Header().Get(echo.HeaderContentType), "text/event-stream")
}

// routeLabel is the matched route template, or "unmatched" when the router found
// no route: labels then stay few whatever paths clients try.
func routeLabel(c echo.Context) string {
	var he *echo.HTTPError
	if cause, ok := c.Get(causeKey).(error); ok && errors.As(cause, &he) &&
		(he.Code == http.StatusNotFound || he.Code == http.StatusMethodNotAllowed) {
		return "unmatched"
	}
	if c.Path() == "" {
		return "unmatched"
	}
	return c.Path()
}

// readyGate refuses API requests with 503 until startup has finished, so that no
// handler runs against a database that is still being migrated or checked.
func readyGate(started func() bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if !started() && isGatedAPIPath(c.Request().URL.Path) {
				return apperr.Unavailable("the service is starting; retry shortly", nil)
			}
			return next(c)
		}
	}
}

// isGatedAPIPath reports whether path is an API operation (not the contract or its page).
func isGatedAPIPath(path string) bool {
	return strings.HasPrefix(path, "/api/v1/") && !isStaticAPIPath(path)
}

// isStaticAPIPath reports whether path is the contract or the API page, which are
// served from memory and need neither the database nor validation.
func isStaticAPIPath(path string) bool {
	return path == "/api/v1/openapi.json" || path == "/api/v1/docs" || strings.HasPrefix(path, "/api/v1/docs/")
}
