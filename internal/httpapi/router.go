package httpapi

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"

	"github.com/svcdev/svc/gen/api"
	"github.com/svcdev/svc/gen/openapi"
	"github.com/svcdev/svc/internal/console"
	"github.com/svcdev/svc/internal/health"
	"github.com/svcdev/svc/internal/idempotency"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/metrics"
	"github.com/svcdev/svc/internal/reqbody"
	"github.com/svcdev/svc/internal/webui"
)

// Options configures the HTTP handler of one process.
type Options struct {
	// Control serves the API, the contract, the API page and the console; without
	// it (a worker) only the probes are served and every other path is 404, and
	// the fields below Bodies are unused.
	Control      bool
	Health       *health.Checker
	Log          *slog.Logger
	Metrics      *metrics.Metrics
	RequestBytes int64
	// Bodies bounds how request bodies are read (package reqbody).
	Bodies reqbody.Limits

	// Services are the domain services the handlers call, built by internal/app.
	Services Services
	// Console serves the console's pages.
	Console *console.Console
	// Pool and Keyring keep the sealed responses the Idempotency-Key
	// middleware replays.
	Pool    *pgxpool.Pool
	Keyring *keyring.Ring
	// KeyRequestsPerMinute is limits.api_requests_per_key_per_minute.
	KeyRequestsPerMinute int
	// AssetBytes is limits.asset_bytes: no stored upload is longer, so a
	// replayed one is hashed no further.
	AssetBytes int64
	// CORSAllowedOrigins is server.cors_allowed_origins: the origins whose
	// browser pages may call the API (docs/decisions/0053-cors.md).
	CORSAllowedOrigins []string
}

// contract is the written OpenAPI document, embedded as JSON by `make
// generate`: served as those bytes and parsed to validate requests. It is
// parsed once, when the handler is built.
type contract struct {
	json []byte
	doc  *openapi3.T
}

func loadContract() (contract, error) {
	doc, err := openapi.Load()
	if err != nil {
		return contract{}, fmt.Errorf("load embedded contract: %w", err)
	}
	return contract{json: openapi.JSON(), doc: doc}, nil
}

// New builds the HTTP handler for a process.
func New(opts Options) (*echo.Echo, error) {
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = errorHandler(opts.Log)
	guard := reqbody.NewGuard(opts.Bodies, opts.Metrics.UnauthenticatedBodies, opts.Metrics.UnauthenticatedBodiesRefused)
	e.Use(traceRoute)
	e.Use(requestID, observe(opts.Log, opts.Metrics), guardBodies(guard, opts.Services.Clients))

	if !opts.Control {
		w := &api.ServerInterfaceWrapper{Handler: api.NewStrictHandler(&Server{Health: opts.Health}, nil)}
		e.GET("/healthz", w.GetHealth)
		e.GET("/readyz", w.GetReadiness)
		return e, nil
	}
	if opts.Console == nil || opts.Pool == nil || opts.Keyring == nil {
		return nil, errors.New("httpapi: a control process needs the console, the pool and the key ring")
	}
	srv, err := newServer(opts.Health, opts.Log, opts.Services)
	if err != nil {
		return nil, err
	}
	handlers := api.NewStrictHandler(srv, []api.StrictMiddlewareFunc{srv.InvitationHandlers.withClientAddr})

	c, err := loadContract()
	if err != nil {
		return nil, err
	}
	keyLimit := keyRateLimit{Limiter: opts.Services.Limiter, PerMinute: opts.KeyRequestsPerMinute}
	binary := binaryOperations(c.doc)
	// Authentication comes before anything reads a body: a request without
	// a valid key is answered from its headers, its body unread.
	// OPTIONS and CORS preflights are answered before the readiness gate and
	// authentication: they carry no credentials.
	e.Use(newCORSPolicy(opts.CORSAllowedOrigins, c.doc).middleware)
	e.Use(readyGate(opts.Health.Started), authenticateFirst(keyedOperations(c.doc), opts.Services.Auth, keyLimit),
		jsonBody(opts.RequestBytes, binary), streamBodies(binary, requestValidator(c.doc, authenticated)), unknownQuery(declaredQueryParams(c.doc)))
	e.Use(idempotency.Middleware(idempotency.Config{
		Contract: c.doc, Pool: opts.Pool, Keyring: opts.Keyring, Log: opts.Log,
		Streamed:      func(c echo.Context) bool { return binary.of(c) == binaryRequest },
		StreamedLimit: opts.AssetBytes,
	}))
	api.RegisterHandlers(e, handlers)
	e.GET("/api/v1/openapi.json", func(ec echo.Context) error {
		return ec.Blob(http.StatusOK, "application/json; charset=utf-8", c.json)
	})
	e.GET("/api/v1/docs", webui.DocsPage)
	e.GET("/api/v1/docs/assets/:name", webui.DocsAsset)
	opts.Console.Register(e)
	return e, nil
}
