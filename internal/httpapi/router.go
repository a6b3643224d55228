package httpapi

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"

	"github.com/svcdev/svc/gen/api"
	"github.com/svcdev/svc/gen/spec"
	"github.com/svcdev/svc/internal/console"
	"github.com/svcdev/svc/internal/health"
	"github.com/svcdev/svc/internal/idempotency"
	"github.com/svcdev/svc/internal/metrics"
	"github.com/svcdev/svc/internal/provider/types"
	"github.com/svcdev/svc/internal/ratelimit"
	"github.com/svcdev/svc/internal/reqbody"
	"github.com/svcdev/svc/internal/webui"
)

// Options configures the HTTP handler of one process.
type Options struct {
	// Control serves the API, the contract, the API page and the console; without
	// it (a worker) only the probes are served and every other path is 404.
	Control      bool
	Health       *health.Checker
	Log          *slog.Logger
	Metrics      *metrics.Metrics
	RequestBytes int64
	// Bodies bounds how request bodies are read (package reqbody).
	Bodies reqbody.Limits
	// Deps build the domain handlers of control roles.
	Deps Deps
}

// contract is the embedded OpenAPI document: served as JSON and used to validate
// requests. It is parsed once, when the first handler is built.
type contract struct {
	json []byte
	doc  *openapi3.T
}

func loadContract() (contract, error) {
	raw, err := spec.GetSpecJSON()
	if err != nil {
		return contract{}, fmt.Errorf("decode embedded contract: %w", err)
	}
	doc, err := spec.GetSpec()
	if err != nil {
		return contract{}, fmt.Errorf("load embedded contract: %w", err)
	}
	return contract{json: raw, doc: doc}, nil
}

// New builds the HTTP handler for a process.
func New(opts Options) (*echo.Echo, error) {
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = errorHandler(opts.Log)
	guard := reqbody.NewGuard(opts.Bodies, opts.Metrics.UnauthenticatedBodies, opts.Metrics.UnauthenticatedBodiesRefused)
	e.Use(requestID, observe(opts.Log, opts.Metrics), guardBodies(guard))

	srv := &Server{Health: opts.Health}
	if !opts.Control {
		w := &api.ServerInterfaceWrapper{Handler: api.NewStrictHandler(srv, nil)}
		e.GET("/healthz", w.GetHealth)
		e.GET("/readyz", w.GetReadiness)
		return e, nil
	}
	var err error
	if opts.Deps.Types == nil {
		if opts.Deps.Types, err = types.New(types.Options{LocalEnabled: opts.Deps.Config.Environments.LocalEnabled}); err != nil {
			return nil, err
		}
	}
	if srv.IdentityHandlers, err = NewIdentityHandlers(opts.Deps); err != nil {
		return nil, err
	}
	if srv.InvitationHandlers, err = NewInvitationHandlers(opts.Deps); err != nil {
		return nil, err
	}
	if srv.ProviderTypeHandlers, err = NewProviderTypeHandlers(opts.Deps); err != nil {
		return nil, err
	}
	if srv.ProviderHandlers, err = NewProviderHandlers(opts.Deps); err != nil {
		return nil, err
	}
	if srv.ModelHandlers, err = NewModelHandlers(opts.Deps); err != nil {
		return nil, err
	}
	if srv.AgentHandlers, err = NewAgentHandlers(opts.Deps); err != nil {
		return nil, err
	}
	if srv.SkillHandlers, err = NewSkillHandlers(opts.Deps); err != nil {
		return nil, err
	}
	if srv.ConnectionHandlers, err = NewConnectionHandlers(opts.Deps); err != nil {
		return nil, err
	}
	if srv.EnvironmentHandlers, err = NewEnvironmentHandlers(opts.Deps); err != nil {
		return nil, err
	}
	if srv.MemoryHandlers, err = NewMemoryHandlers(opts.Deps); err != nil {
		return nil, err
	}
	if srv.SubscriptionHandlers, err = NewSubscriptionHandlers(opts.Deps); err != nil {
		return nil, err
	}
	if srv.DeliveryHandlers, err = NewDeliveryHandlers(opts.Deps); err != nil {
		return nil, err
	}
	if srv.AssetHandlers, err = NewAssetHandlers(opts.Deps); err != nil {
		return nil, err
	}
	if srv.RunHandlers, err = NewRunHandlers(opts.Deps, func() bool { return !opts.Health.Started() }); err != nil {
		return nil, err
	}
	handlers := api.NewStrictHandler(srv, []api.StrictMiddlewareFunc{srv.InvitationHandlers.withClientAddr})

	c, err := loadContract()
	if err != nil {
		return nil, err
	}
	d := opts.Deps
	limiter := ratelimit.New(d.Redis, d.Config.Redis.KeyPrefix, opts.Log)
	keyLimit := keyRateLimit{Limiter: limiter, PerMinute: d.Config.Limits.APIRequestsPerKeyPerMinute}
	binary := binaryOperations(c.doc)
	// Authentication comes before anything reads a body: a request without
	// a valid key is answered from its headers, its body unread.
	e.Use(readyGate(opts.Health.Started), authenticateFirst(keyedOperations(c.doc), d.Auth, keyLimit),
		jsonBody(opts.RequestBytes, binary), streamBodies(binary, requestValidator(c.doc, authenticated)), unknownQuery(declaredQueryParams(c.doc)))
	e.Use(idempotency.Middleware(idempotency.Config{
		Contract: c.doc, Pool: d.Pool, Keyring: d.Keyring, Log: opts.Log,
		Streamed:      func(c echo.Context) bool { return binary.of(c) == binaryRequest },
		StreamedLimit: d.Config.Limits.AssetBytes,
	}))
	api.RegisterHandlers(e, handlers)
	e.GET("/api/v1/openapi.json", func(ec echo.Context) error {
		return ec.Blob(http.StatusOK, "application/json; charset=utf-8", c.json)
	})
	e.GET("/api/v1/docs", webui.DocsPage)
	e.GET("/api/v1/docs/assets/:name", webui.DocsAsset)
	cons, err := console.New(console.Deps{
		Config: d.Config, Log: opts.Log, Pool: d.Pool, Keyring: d.Keyring, Limiter: limiter,
		ForgetFunc: d.Auth.Forget, Started: opts.Health.Started,
	})
	if err != nil {
		return nil, err
	}
	cons.Register(e)
	return e, nil
}
