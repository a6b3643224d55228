package app

import (
	"crypto/tls"
	"net/http"
	"time"

	"github.com/svcdev/svc/internal/agent"
	"github.com/svcdev/svc/internal/asset"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/connection"
	"github.com/svcdev/svc/internal/console"
	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/environment"
	"github.com/svcdev/svc/internal/environment/template"
	"github.com/svcdev/svc/internal/httpapi"
	"github.com/svcdev/svc/internal/identity"
	"github.com/svcdev/svc/internal/invitation"
	"github.com/svcdev/svc/internal/memory"
	"github.com/svcdev/svc/internal/model"
	"github.com/svcdev/svc/internal/outbox"
	"github.com/svcdev/svc/internal/provider"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/provider/probe"
	"github.com/svcdev/svc/internal/ratelimit"
	"github.com/svcdev/svc/internal/refcheck"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/sandbox/docker"
	"github.com/svcdev/svc/internal/sandbox/hosted"
	"github.com/svcdev/svc/internal/sandbox/local"
	"github.com/svcdev/svc/internal/session"
	"github.com/svcdev/svc/internal/skill"
	"github.com/svcdev/svc/internal/stream"
	"github.com/svcdev/svc/internal/subscription"
	"github.com/svcdev/svc/internal/webhook"
)

// Services are the domain services of one process. buildServices builds each
// of them once; the API, the console, the worker, the sweeps and the
// outbox's deliverers all use these instances, and no other package builds a
// service of its own (docs/decisions/0045-composition-root.md).
type Services struct {
	// Types is the registry of installed provider types (their JSON
	// Schemas, compiled once).
	Types *catalog.Registry
	// Policy guards every outbound call (vendors, webhooks, environments);
	// Outbound is its client without a timeout, shared by the environment
	// drivers and the worker's vendor calls.
	Policy   *endpoint.Policy
	Outbound *http.Client
	// Limiter counts rate limits in Redis: per API key, sign-in attempts and
	// invitation acceptances (the API's and the console's in the same buckets).
	Limiter *ratelimit.Limiter
	// Clients tells the client address rate limits count against.
	Clients *ratelimit.Clients
	Auth    *auth.Authenticator

	Identity    *identity.Service
	Invitations *invitation.Service
	Sessions    *session.Service

	Providers *provider.Service
	Models    *model.Service
	Memories  *memory.Service
	Templates *template.Service
	// Connections also drives the connection authorizations this process
	// owns and recovers those of processes that disappeared.
	Connections *connection.Service
	Assets      *asset.Service
	// Agents and Skills check what their configurations name in other
	// domains through refcheck.Workspace.
	Agents *agent.Service
	Skills *skill.Service

	Subscriptions *subscription.Service
	// Deliveries are the webhook deliveries users inspect and redeliver; their
	// views show the webhook kind's effective max_attempts (outbox.defaults
	// and outbox.by_kind).
	Deliveries *webhook.Service

	// Runs is the thread and run lifecycle of the API, the worker and the
	// sweeps; it publishes committed events to the threads' live tails, and
	// Events streams them to readers.
	Runs   *run.Service
	Events *stream.Hub
	// Environments lists and reads environments for the API;
	// EnvironmentRuntime makes, reuses and maintains them through the drivers
	// of the installed environment catalog.
	Environments       *environment.Service
	EnvironmentRuntime *environment.Runtime
}

// buildServices builds the services in dependency order: the shared
// foundations, then identity, then the resources (each after what it
// references), then runs and environments.
func (a *App) buildServices() (*Services, error) {
	cfg, pool, ring, log := a.cfg, a.Pool, a.Keyring, a.log
	vendorTimeout := time.Duration(cfg.Providers.ProbeTimeoutSeconds) * time.Second
	// The operator's rule on docker networks and users: the provider and
	// template checks and the docker driver apply the same one.
	dockerGuard := docker.Guard{Networks: cfg.Environments.DockerNetworks, AllowRoot: cfg.Environments.DockerAllowRoot}
	s := &Services{
		Limiter: ratelimit.New(a.Redis, cfg.Redis.KeyPrefix, log),
		Auth:    auth.NewAuthenticator(pool, log),
	}
	var err error
	if s.Types, err = catalog.New(catalog.Options{LocalEnabled: cfg.Environments.LocalEnabled}); err != nil {
		return nil, err
	}
	if s.Policy, err = endpoint.NewPolicy(cfg.EndpointPolicy); err != nil {
		return nil, err
	}
	s.Outbound = s.Policy.HTTPClient(0)
	if s.Clients, err = ratelimit.NewClients(cfg.Server.TrustedProxies); err != nil {
		return nil, err
	}

	// Identity. Changes that alter what a key may do make the authenticator
	// forget its cache, so this process applies them at once.
	s.Identity = identity.NewService(pool, s.Auth.Forget)
	if s.Invitations, err = invitation.NewService(invitation.Options{
		Pool: pool, Keyring: ring, PublicURL: cfg.Server.PublicURL, Limiter: s.Limiter, ForgetFunc: s.Auth.Forget,
		TTL:                                   time.Duration(cfg.Auth.InvitationTTLSeconds) * time.Second,
		ConfirmationTTL:                       time.Duration(cfg.Auth.InvitationConfirmationTTLSeconds) * time.Second,
		AcceptPerAddressPerMinute:             cfg.Limits.InvitationAcceptPerAddressPerMinute,
		AcceptPerInvitationPerClientPerMinute: cfg.Limits.InvitationAcceptPerInvitationPerClientPerMinute,
		AcceptPerInvitationPerMinute:          cfg.Limits.InvitationAcceptPerInvitationPerMinute,
	}); err != nil {
		return nil, err
	}
	if s.Sessions, err = session.NewService(session.Options{
		Pool: pool, Keyring: ring, Limiter: s.Limiter, Log: log, PublicURL: cfg.Server.PublicURL,
		SessionTTL:                   time.Duration(cfg.Auth.SessionTTLSeconds) * time.Second,
		MailLinkTTL:                  time.Duration(cfg.Auth.MailLinkTTLSeconds) * time.Second,
		PerAccountPerClientPerMinute: cfg.Limits.SignInPerAccountPerClientPerMinute,
		PerAccountPerMinute:          cfg.Limits.SignInPerAccountPerMinute,
		PerAddressPerMinute:          cfg.Limits.SignInPerAddressPerMinute,
	}); err != nil {
		return nil, err
	}

	// Resources. Vendor calls follow the endpoint policy, each bounded by
	// providers.probe_timeout_seconds. The connection authorizations this
	// process starts name it as their owner, whose driver polls the vendor.
	s.Providers = provider.NewService(pool, ring, s.Types, s.Policy, probe.New(s.Policy, vendorTimeout))
	s.Providers.SetConfigCheck(docker.TypeID, dockerGuard.ProviderCheck)
	s.Models = model.NewService(pool, s.Types, ring)
	s.Memories = memory.NewService(pool, s.Types, ring)
	s.Templates = template.NewService(pool, s.Types)
	s.Templates.SetConfigCheck(docker.TypeID, dockerGuard.TemplateCheck)
	s.Connections = connection.NewService(pool, ring, s.Types, connection.NewVendors(s.Policy, vendorTimeout),
		connection.Options{Owner: a.ReplicaID, Timeout: vendorTimeout, Log: log})
	s.Assets = asset.NewService(pool, a.Store, cfg.Limits.AssetBytes, log)
	references := refcheck.Workspace{Types: s.Types, Connections: s.Connections, Assets: s.Assets}
	s.Agents = agent.NewService(pool, s.Types, references)
	s.Skills = skill.NewService(pool, references)
	s.Subscriptions = subscription.NewService(pool, ring, s.Policy, subscription.WithMaxPerWorkspace(cfg.Limits.SubscriptionsPerWorkspace))
	s.Deliveries = webhook.NewService(pool, cfg.Outbox.Policy(outbox.KindWebhook).MaxAttempts)

	// Runs. Starting a run reads the agent's and skills' runnable revisions,
	// which checks no reference, so the one run service serves the API, the
	// worker and the sweeps alike. Its lease (worker.lease_seconds) only
	// times the expire_leases sweep's deletion of stray checkpoints.
	s.Runs = run.NewService(pool, s.Agents, s.Skills, s.Types, run.Options{
		MaxAttempts: cfg.Worker.MaxAttempts, MaxRunning: cfg.Worker.WorkspaceMaxRunning, MaxWaitingRuns: cfg.Limits.WorkspaceMaxWaitingRuns,
		Lease:     time.Duration(cfg.Worker.LeaseSeconds) * time.Second,
		Publisher: stream.NewPublisher(a.Redis, cfg.Redis.KeyPrefix, log),
		Metrics:   run.NewMetrics(a.Metrics.Registry),
	})
	// Open streams end when the process stops, so that they do not hold the
	// HTTP server's graceful shutdown.
	s.Events = stream.NewHub(a.Redis, cfg.Redis.KeyPrefix, s.Runs.EventsAfter, log,
		stream.Options{Stopping: func() bool { return !a.Health.Started() }, Metrics: stream.NewMetrics(a.Metrics.Registry)})

	// Environments.
	drivers := hosted.NewWithTLS(s.Outbound, func(c *tls.Config) *http.Client {
		return s.Policy.HTTPClient(0, endpoint.WithTLSConfig(c))
	})
	drivers[hosted.TypeModal] = hosted.NewModal(s.Policy, hosted.ModalOptions{})
	drivers[catalog.LocalType] = local.NewDriver(cfg.Environments, local.Options{})
	drivers[docker.TypeID] = docker.New(s.Policy, docker.Options{Guard: dockerGuard})
	s.Environments = environment.NewService(pool)
	s.EnvironmentRuntime = environment.NewRuntime(pool, ring, drivers, time.Duration(cfg.Environments.RenewalSeconds)*time.Second,
		log.With("component", "environments"))
	return s, nil
}

// api is what the API's handlers call.
// console is the share of the services the console's workspace pages call.
func (s *Services) console() console.Services {
	return console.Services{
		Types: s.Types, Identity: s.Identity,
		Providers: s.Providers, Models: s.Models, Memories: s.Memories, Templates: s.Templates,
		Connections: s.Connections, Assets: s.Assets, Agents: s.Agents, Skills: s.Skills,
		Subscriptions: s.Subscriptions, Deliveries: s.Deliveries,
		Runs: s.Runs, Events: s.Events, Environments: s.Environments,
	}
}

func (s *Services) api() httpapi.Services {
	return httpapi.Services{
		Auth: s.Auth, Limiter: s.Limiter, Clients: s.Clients, Types: s.Types,
		Identity: s.Identity, Invitations: s.Invitations,
		Providers: s.Providers, Models: s.Models, Memories: s.Memories, Templates: s.Templates,
		Connections: s.Connections, Assets: s.Assets, Agents: s.Agents, Skills: s.Skills,
		Subscriptions: s.Subscriptions, Deliveries: s.Deliveries,
		Runs: s.Runs, Events: s.Events, Environments: s.Environments,
	}
}
