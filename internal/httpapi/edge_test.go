package httpapi

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/metrics"
)

// testContract has one operation with a body and a query parameter, so the edge's
// handling of bodies can be tested before the real contract has such operations.
const testContract = `
openapi: 3.0.3
info: {title: edge test, version: "1"}
paths:
  /api/v1/things:
    post:
      operationId: createThing
      parameters:
        - {name: limit, in: query, schema: {type: integer, minimum: 1, maximum: 200}}
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              additionalProperties: false
              required: [name]
              properties:
                name: {type: string, minLength: 1, maxLength: 20}
                email: {type: string, format: email}
                config:
                  type: object
                  additionalProperties: false
                  properties:
                    base_url: {type: string, format: uri}
      responses:
        "201": {description: created}
  /api/v1/blobs:
    post:
      operationId: uploadBlob
      x-svc-binary: request
      parameters:
        - {name: name, in: query, required: true, schema: {type: string, minLength: 1}}
      requestBody:
        content:
          "*/*":
            schema: {type: string, format: binary}
      responses:
        "201": {description: created}
  /api/v1/blobs/{id}:
    get:
      operationId: getBlob
      x-svc-binary: response
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
      responses:
        "200":
          description: the blob
          content:
            "*/*":
              schema: {type: string, format: binary}
`

type edgeBundle struct {
	e       *echo.Echo
	started atomic.Bool
	logs    *strings.Builder
	handled atomic.Int32
}

func setupEdge(t *testing.T) *edgeBundle {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData([]byte(testContract))
	require.NoError(t, err)
	require.NoError(t, doc.Validate(t.Context()))

	b := &edgeBundle{logs: &strings.Builder{}}
	b.started.Store(true)
	log := slog.New(slog.NewJSONHandler(&lockedWriter{w: b.logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := echo.New()
	e.HTTPErrorHandler = errorHandler(log)
	e.Use(requestID, observe(log, metrics.New("test", 1)), readyGate(b.started.Load), jsonBody(256, binaryOperations(doc)), streamBodies(binaryOperations(doc), requestValidator(doc, nil)))
	e.POST("/api/v1/things", func(c echo.Context) error {
		b.handled.Add(1)
		var v map[string]any
		if err := json.NewDecoder(c.Request().Body).Decode(&v); err != nil {
			return err
		}
		return c.JSON(http.StatusCreated, v)
	})
	e.POST("/api/v1/blobs", func(c echo.Context) error {
		b.handled.Add(1)
		body := c.Request().Body
		if tb, ok := body.(*trackingBody); !ok || tb.n != 0 {
			return c.String(http.StatusInternalServerError, "the body was read or replaced before the handler")
		}
		n, err := io.Copy(io.Discard, body)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusCreated, map[string]int64{"bytes": n, "announced": bodySize(c.Request().Context())})
	})
	e.GET("/api/v1/blobs/:id", func(c echo.Context) error {
		return c.Blob(http.StatusOK, "image/png", []byte("png"))
	})
	e.GET("/boom", func(echo.Context) error { panic("secret internal detail") })
	b.e = e
	return b
}

type lockedWriter struct {
	mu atomic.Int32
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	for !l.mu.CompareAndSwap(0, 1) {
	}
	defer l.mu.Store(0)
	return l.w.Write(p)
}

func (b *edgeBundle) do(t *testing.T, method, target, contentType, body string, header ...string) (*httptest.ResponseRecorder, errorPayload) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, r)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	b.e.ServeHTTP(rec, req)
	var eb errorBody
	if rec.Code >= 400 {
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &eb), "error bodies are JSON: %s", rec.Body.String())
		require.Equal(t, rec.Header().Get("X-Request-Id"), eb.Error.RequestID)
		require.NotEmpty(t, eb.Error.RequestID)
		require.Equal(t, "application/json; charset=utf-8", rec.Header().Get("Content-Type"))
	}
	return rec, eb.Error
}

func TestValidBodyReachesHandler(t *testing.T) {
	t.Parallel()
	b := setupEdge(t)
	rec, _ := b.do(t, http.MethodPost, "/api/v1/things?limit=5", "application/json; charset=utf-8", `{"name":"a","email":"a@example.com","config":{"base_url":"https://x.example"}}`)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	require.JSONEq(t, `{"name":"a","email":"a@example.com","config":{"base_url":"https://x.example"}}`, rec.Body.String())
}

func TestBodiesAreRefusedClearly(t *testing.T) {
	t.Parallel()

	cases := []struct {
		name, contentType, body string
		status                  int
		code, field             string
		header                  []string
	}{
		{"duplicate key", "application/json", `{"name":"a","name":"b"}`, 400, "invalid_argument", "name", nil},
		{"nested duplicate key", "application/json", `{"name":"a","config":{"base_url":"x","base_url":"y"}}`, 400, "invalid_argument", "config.base_url", nil},
		{"trailing data", "application/json", `{"name":"a"} {"name":"b"}`, 400, "invalid_argument", "", nil},
		{"NUL in a string", "application/json", `{"name":"a\u0000b"}`, 400, "invalid_argument", "name", nil},
		{"lone surrogate", "application/json", `{"name":"\ud800"}`, 400, "invalid_argument", "name", nil},
		{"invalid UTF-8", "application/json", "{\"name\":\"\xff\"}", 400, "invalid_argument", "", nil},
		{"malformed", "application/json", `{"name":`, 400, "invalid_argument", "", nil},
		{"unknown field", "application/json", `{"name":"a","nmae":"b"}`, 400, "invalid_argument", "nmae", nil},
		{"case-variant field", "application/json", `{"Name":"a"}`, 400, "invalid_argument", "", nil},
		{"nested unknown field", "application/json", `{"name":"a","config":{"base_ur":"x"}}`, 400, "invalid_argument", "config.base_ur", nil},
		{"wrong type", "application/json", `{"name":5}`, 400, "invalid_argument", "name", nil},
		{"missing required", "application/json", `{}`, 400, "invalid_argument", "", nil},
		{"bad email", "application/json", `{"name":"a","email":"not-an-email"}`, 400, "invalid_argument", "email", nil},
		{"too long", "application/json", `{"name":"` + strings.Repeat("x", 21) + `"}`, 400, "invalid_argument", "name", nil},
		{"too large", "application/json", `{"name":"` + strings.Repeat("x", 300) + `"}`, 413, "payload_too_large", "", nil},
		{"not JSON content type", "text/plain", `{"name":"a"}`, 415, "unsupported_media_type", "", nil},
		{"no content type", "", `{"name":"a"}`, 415, "unsupported_media_type", "", nil},
		{"non-UTF-8 charset", "application/json; charset=latin1", `{"name":"a"}`, 415, "unsupported_media_type", "", nil},
		{"unacceptable Accept", "application/json", `{"name":"a"}`, 406, "not_acceptable", "", []string{"Accept", "text/html"}},
		{"Accept with json at q=0", "application/json", `{"name":"a"}`, 406, "not_acceptable", "", []string{"Accept", "application/json;q=0, text/html"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupEdge(t)
			rec, e := b.do(t, http.MethodPost, "/api/v1/things", tc.contentType, tc.body, tc.header...)
			require.Equal(t, tc.status, rec.Code, rec.Body.String())
			require.Equal(t, tc.code, e.Code)
			if tc.field != "" {
				require.NotEmpty(t, e.Details, rec.Body.String())
				require.Equal(t, tc.field, e.Details[0].Field, rec.Body.String())
			}
			require.NotContains(t, rec.Body.String(), "Schema:", "no schema dumps")
			require.NotContains(t, rec.Body.String(), `"properties"`, "no schema dumps")
			require.Zero(t, b.handled.Load(), "the handler never ran")
		})
	}
}

func TestBadQueryParameterIsNamed(t *testing.T) {
	t.Parallel()
	b := setupEdge(t)
	rec, e := b.do(t, http.MethodPost, "/api/v1/things?limit=500", "application/json", `{"name":"a"}`)
	require.Equal(t, http.StatusBadRequest, rec.Code)
	require.Equal(t, "invalid_argument", e.Code)
	require.Equal(t, "limit", e.Details[0].Field)
}

func TestAcceptVariantsThatAllowJSON(t *testing.T) {
	t.Parallel()
	for _, accept := range []string{"application/json", "*/*", "application/*", "text/html, application/json;q=0.5", "application/json; charset=utf-8"} {
		require.True(t, acceptsJSON([]string{accept}), accept)
	}
	require.True(t, acceptsJSON(nil))
	require.False(t, acceptsJSON([]string{"text/event-stream"}))
}

func TestPanicsBecomeOpaque500s(t *testing.T) {
	t.Parallel()
	b := setupEdge(t)
	rec, e := b.do(t, http.MethodGet, "/boom", "", "")
	require.Equal(t, http.StatusInternalServerError, rec.Code)
	require.Equal(t, "internal", e.Code)
	require.Equal(t, "internal error", e.Message)
	require.NotContains(t, rec.Body.String(), "secret internal detail")

	var rec500 map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.logs.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		if m["request_id"] == e.RequestID {
			rec500 = m
		}
	}
	require.NotNil(t, rec500, "the request is logged with its id")
	require.Equal(t, "ERROR", rec500["level"])
	require.Contains(t, rec500["error"], "secret internal detail", "the cause stays in the log")
}

func TestAPIIsUnavailableUntilStarted(t *testing.T) {
	t.Parallel()
	b := setupEdge(t)
	b.started.Store(false)
	rec, e := b.do(t, http.MethodPost, "/api/v1/things", "application/json", `{"name":"a"}`)
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.Equal(t, "unavailable", e.Code)
	require.Zero(t, b.handled.Load())

	b.started.Store(true)
	rec, _ = b.do(t, http.MethodPost, "/api/v1/things", "application/json", `{"name":"a"}`)
	require.Equal(t, http.StatusCreated, rec.Code)
}

func TestRequestIDValidation(t *testing.T) {
	t.Parallel()
	require.True(t, validRequestID("abc-DEF_1.2"))
	require.True(t, validRequestID(strings.Repeat("a", 128)))
	for _, bad := range []string{"", strings.Repeat("a", 129), "a b", "a\nb", "ä", "a/b"} {
		require.False(t, validRequestID(bad), "%q", bad)
	}
}

// trackingBody counts what was read of a request body.
type trackingBody struct {
	r io.Reader
	n int64
}

func (b *trackingBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.n += int64(n)
	return n, err
}

func (b *trackingBody) Close() error { return nil }

// TestBinaryBodiesPassTheEdgeUnread: an upload (x-svc-binary: request) is
// exempt from the JSON rules and limits.request_bytes, and reaches its
// handler unread, with its announced length; its parameters and the Accept
// rule are still checked. A download (x-svc-binary: response) is not held to
// Accept: application/json.
func TestBinaryBodiesPassTheEdgeUnread(t *testing.T) {
	t.Parallel()
	b := setupEdge(t)
	send := func(target, contentType string, size int64, header ...string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, target, nil)
		req.Body = &trackingBody{r: strings.NewReader(strings.Repeat("\x00\xff", 5000))}
		req.ContentLength = size
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		rec := httptest.NewRecorder()
		b.e.ServeHTTP(rec, req)
		return rec
	}
	for _, ct := range []string{"image/png", "", "application/json", "text/plain; charset=latin1"} {
		rec := send("/api/v1/blobs?name=x", ct, 10000)
		require.Equal(t, http.StatusCreated, rec.Code, "%q: %s", ct, rec.Body.String())
		require.JSONEq(t, `{"bytes":10000,"announced":10000}`, rec.Body.String())
	}
	rec := send("/api/v1/blobs?name=x", "image/png", -1)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	require.JSONEq(t, `{"bytes":10000,"announced":-1}`, rec.Body.String(), "no Content-Length: chunked")

	handled := b.handled.Load()
	rec = send("/api/v1/blobs", "image/png", 10000)
	require.Equal(t, http.StatusBadRequest, rec.Code, "parameters are still validated")
	rec = send("/api/v1/blobs?name=x", "image/png", 10000, "Accept", "text/html")
	require.Equal(t, http.StatusNotAcceptable, rec.Code, "the answer is JSON, so Accept still counts")
	require.Equal(t, handled, b.handled.Load())

	got, _ := b.do(t, http.MethodGet, "/api/v1/blobs/1", "", "", "Accept", "image/png")
	require.Equal(t, http.StatusOK, got.Code)
	require.Equal(t, "png", got.Body.String())
}
