package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/svcdev/svc/internal/asset"
	"github.com/svcdev/svc/internal/buildinfo"
	"github.com/svcdev/svc/internal/checkpoint"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/console"
	"github.com/svcdev/svc/internal/credexpiry"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/health"
	"github.com/svcdev/svc/internal/httpapi"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/idempotency"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/llm"
	"github.com/svcdev/svc/internal/mail"
	"github.com/svcdev/svc/internal/memory"
	"github.com/svcdev/svc/internal/metrics"
	"github.com/svcdev/svc/internal/objectstore"
	"github.com/svcdev/svc/internal/outbox"
	"github.com/svcdev/svc/internal/reqbody"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/sandbox/hosted"
	"github.com/svcdev/svc/internal/supervisor"
	"github.com/svcdev/svc/internal/sweep"
	"github.com/svcdev/svc/internal/tool"
	connectiontool "github.com/svcdev/svc/internal/tool/connection"
	environmenttool "github.com/svcdev/svc/internal/tool/environment"
	memorytool "github.com/svcdev/svc/internal/tool/memory"
	"github.com/svcdev/svc/internal/tool/subagent"
	"github.com/svcdev/svc/internal/tool/web"
	"github.com/svcdev/svc/internal/tracing"
	"github.com/svcdev/svc/internal/webhook"
	"github.com/svcdev/svc/internal/worker"
	schema "github.com/svcdev/svc/sql"
)

// App is one svc process.
type App struct {
	cfg  *config.Config
	role Role
	log  *slog.Logger

	Metrics    *metrics.Metrics
	Health     *health.Checker
	Supervisor *supervisor.Supervisor
	Sweeps     *sweep.Runner
	Pool       *pgxpool.Pool
	Redis      *redis.Client
	Keyring    *keyring.Ring
	// Services are the domain services, built once (services.go).
	*Services
	// Store keeps asset content and checkpoints.
	Store objectstore.Store
	// ReplicaID names this process in claims and leases.
	ReplicaID string
	// Outbox delivers the outbox on control processes (Outbox.Run).
	Outbox *outbox.Engine
	// Worker executes runs on worker processes (nil on control-only ones).
	Worker *worker.Worker
	// Tracing is the process's OpenTelemetry tracing (tracing.* keys); off
	// unless tracing.otlp_endpoint is set.
	Tracing *tracing.Provider

	httpSrv    *http.Server
	ln         net.Listener
	metricsSrv *http.Server
	metricsLn  net.Listener
	serveErr   chan error
}

// New builds a process without starting it. It reads the key ring, which every
// role needs, and refuses to go on without one.
func New(ctx context.Context, cfg *config.Config, role Role, log *slog.Logger) (*App, error) {
	if cfg.Encryption.KeyFile == "" {
		return nil, errors.New("encryption.key_file is not set: create a key ring with `svc keyring generate --out FILE` and set encryption.key_file (or SVC_ENCRYPTION__KEY_FILE)")
	}
	ring, err := keyring.Load(cfg.Encryption.KeyFile)
	if err != nil {
		return nil, err
	}
	store, err := objectstore.Open(cfg.ObjectStore)
	if err != nil {
		return nil, err
	}
	replica := replicaID()
	tr, err := tracing.New(cfg.Tracing, tracing.Process{Version: buildinfo.Version, Role: string(role), ReplicaID: replica}, log)
	if err != nil {
		return nil, err
	}
	// Half a run's lease: a worker frozen inside a fenced write loses its
	// session (and its locks) before the lease sweep needs the row.
	idleInTx := max(time.Duration(cfg.Worker.LeaseSeconds)*time.Second/2, time.Second)
	pool, err := dbx.NewPool(ctx, cfg.Database.URL, dbx.PoolOptions{MaxConns: cfg.Database.MaxConns, ConnectTimeout: cfg.Database.ConnectTimeout,
		IdleInTransaction: idleInTx, Tracer: tr.PoolTracer()})
	if err != nil {
		_ = tr.Shutdown(ctx)
		return nil, err
	}
	fail := func(err error) (*App, error) {
		pool.Close()
		_ = tr.Shutdown(ctx)
		return nil, err
	}
	redisOpts, err := redis.ParseURL(cfg.Redis.URL)
	if err != nil {
		return fail(errors.New("redis.url is not a valid Redis URL"))
	}
	routeRedisLogs(log)
	redisOpts.DialTimeout = redisPingTimeout
	redisOpts.MaxRetries = 1

	a := &App{
		cfg: cfg, role: role, log: log,
		Metrics:   metrics.New(buildinfo.Version, schema.Version()),
		Health:    &health.Checker{Role: string(role), DB: pool, ObjectStore: store, Timeout: cfg.Server.ReadinessTimeout, Log: log},
		Pool:      pool,
		Store:     store,
		Redis:     redis.NewClient(redisOpts),
		Keyring:   ring,
		ReplicaID: replica,
		Tracing:   tr,
		serveErr:  make(chan error, 2),
	}
	if err := tr.InstrumentRedis(a.Redis); err != nil {
		return fail(err)
	}
	a.Metrics.RegisterPool(pool)
	if a.Services, err = a.buildServices(); err != nil {
		return fail(err)
	}
	a.Supervisor = supervisor.New(log)
	a.Health.Tasks = a.Supervisor
	a.Sweeps = sweep.NewRunner(pool, a.ReplicaID, log, a.Metrics)
	a.Outbox = outbox.NewEngine(pool, cfg.Outbox, a.ReplicaID, log, outbox.NewMetrics(a.Metrics.Registry))
	a.Outbox.Scan = time.Duration(cfg.Control.ScanSeconds) * time.Second
	a.Outbox.PassFunc = a.countOutboxPass
	a.Outbox.Tracer = tr.Tracer("github.com/svcdev/svc/internal/outbox")
	if err := a.registerDeliverers(); err != nil {
		return fail(err)
	}
	if role.Worker() {
		a.buildWorker()
	}
	if role.Control() {
		// The run queue's gauges are read from the database at each scrape,
		// as every control replica sees it (take the maximum across them).
		a.Metrics.Registry.MustRegister(a.Runs.QueueCollector(cfg.Metrics.QueryTimeout, log))
	}
	a.registerSweeps()
	return a, nil
}

// buildWorker builds the worker that executes runs, with every toolset this
// build has, over the process's services.
func (a *App) buildWorker() {
	s := a.Services
	memories := memorytool.New(memorytool.Deps{Memories: s.Memories, Registry: s.Types, Policy: s.Policy,
		Timeout: time.Duration(a.cfg.Providers.ProbeTimeoutSeconds) * time.Second})
	exec := worker.NewExecutor(worker.ExecutorDeps{
		Runs: s.Runs, Agents: s.Agents, Skills: s.Skills, Models: s.Models, Objects: a.Store, HTTPClient: s.Outbound, Log: a.log,
		MaxOutputBytes: int(a.cfg.Limits.ModelOutputBytes), MaxToolArgumentBytes: int(a.cfg.Limits.ToolArgumentsBytes),
		ToolResultShare: float64(a.cfg.Limits.ToolResultWindowPercent) / 100,
		Tracer:          a.Tracing.Tracer("github.com/svcdev/svc/internal/worker"),
		ApprovalTimeout: time.Duration(a.cfg.Worker.ApprovalTimeoutSeconds) * time.Second,
		Prompts:         []tool.PromptSection{memories.Prompt},
		ModelMetrics:    llm.NewMetrics(a.Metrics.Registry),
		ToolMetrics:     tool.NewMetrics(a.Metrics.Registry),
		Toolsets: []tool.Toolset{
			web.New(web.Deps{Providers: s.Providers, HTTPClient: s.Outbound}).ForRun,
			environmenttool.New(environmenttool.Deps{Runtime: s.EnvironmentRuntime, Skills: s.Skills, Assets: s.Assets}).ForRun,
			subagent.New(subagent.Deps{Agents: s.Agents, Runs: s.Runs, Limits: run.SubagentLimits{MaxDepth: a.cfg.Worker.SubagentMaxDepth,
				MaxLive: a.cfg.Worker.SubagentMaxLiveChildren, MaxTotal: a.cfg.Worker.SubagentMaxDescendants}}).ForRun,
			memories.ForRun,
			connectiontool.New(connectiontool.Deps{Connections: s.Connections, HTTPClient: s.Outbound,
				Log: a.log.With("component", "connections")}).ForRun,
		},
	})
	a.Worker = worker.New(a.Pool, s.Runs, exec, worker.Options{
		ID: a.ReplicaID, Slots: a.cfg.Worker.Slots, Metrics: worker.NewMetrics(a.Metrics.Registry),
		Lease:  time.Duration(a.cfg.Worker.LeaseSeconds) * time.Second,
		Drain:  time.Duration(a.cfg.Worker.DrainSeconds) * time.Second,
		Gather: time.Duration(a.cfg.Worker.ClaimGatherMS) * time.Millisecond,
		Tracer: a.Tracing.Tracer("github.com/svcdev/svc/internal/worker"),
	}, a.log.With("component", "worker"))
}

// Start listens, prepares the database and starts the background tasks. The
// listener comes first, so /healthz answers (and /readyz says "runtime") while the
// process migrates; the process is ready when Start returns nil.
func (a *App) Start(ctx context.Context) error {
	began := time.Now()
	var err error
	opts := httpapi.Options{
		Control: a.role.Control(), Health: a.Health, Log: a.log, Metrics: a.Metrics,
		RequestBytes: a.cfg.Limits.RequestBytes,
		Bodies: reqbody.Limits{
			Grace:                          a.cfg.Server.BodyReadTimeout,
			MinBytesPerSecond:              a.cfg.Server.BodyMinBytesPerSecond,
			UnauthenticatedTimeout:         a.cfg.Server.UnauthenticatedBodyTimeout,
			UnauthenticatedBytes:           a.cfg.Limits.UnauthenticatedBodyBytes,
			UnauthenticatedBodies:          a.cfg.Limits.UnauthenticatedBodies,
			UnauthenticatedBodiesPerClient: a.cfg.Limits.UnauthenticatedBodiesPerClient,
		},
	}
	if a.role.Control() {
		opts.Services, opts.Pool, opts.Keyring = a.Services.api(), a.Pool, a.Keyring
		opts.KeyRequestsPerMinute, opts.AssetBytes = a.cfg.Limits.APIRequestsPerKeyPerMinute, a.cfg.Limits.AssetBytes
		opts.CORSAllowedOrigins = a.cfg.Server.CORSAllowedOrigins
		if opts.Console, err = console.New(console.Deps{
			Log: a.log, Sessions: a.Sessions, Invitations: a.Invitations, Clients: a.Clients, Services: a.Services.console(),
			PublicURL: a.cfg.Server.PublicURL, MailLinkTTL: time.Duration(a.cfg.Auth.MailLinkTTLSeconds) * time.Second,
			Started: a.Health.Started,
		}); err != nil {
			return err
		}
	}
	handler, err := httpapi.New(opts)
	if err != nil {
		return err
	}
	if a.ln, err = net.Listen("tcp", a.cfg.Server.Listen); err != nil {
		return listenError("server.listen", a.cfg.Server.Listen, err)
	}
	// No ReadTimeout or WriteTimeout: a body's read deadline is set per
	// request, from its credentials and its progress (package reqbody), and
	// streams of events last as long as their clients stay.
	a.httpSrv = &http.Server{
		Handler:           a.Tracing.Handler(handler),
		ReadHeaderTimeout: a.cfg.Server.ReadHeaderTimeout,
		IdleTimeout:       a.cfg.Server.IdleTimeout,
		MaxHeaderBytes:    a.cfg.Server.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelWarn),
	}
	go func() { a.serveErr <- serve(a.httpSrv, a.ln) }()
	if a.cfg.Metrics.Listen != "" {
		if a.metricsLn, err = net.Listen("tcp", a.cfg.Metrics.Listen); err != nil {
			return listenError("metrics.listen", a.cfg.Metrics.Listen, err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", a.Metrics.Handler())
		a.metricsSrv = &http.Server{Handler: mux, ReadHeaderTimeout: a.cfg.Server.ReadHeaderTimeout,
			IdleTimeout: a.cfg.Server.IdleTimeout, MaxHeaderBytes: a.cfg.Server.MaxHeaderBytes}
		go func() { a.serveErr <- serve(a.metricsSrv, a.metricsLn) }()
	}

	if err := dbx.Ping(ctx, a.Pool, a.cfg.Database.ConnectTimeout); err != nil {
		return err
	}
	if a.role.Control() && a.cfg.Database.AutoMigrate {
		res, err := dbx.Migrate(ctx, a.Pool, a.cfg.Database.MigrationAdvisoryLockTimeout, a.log)
		if err != nil {
			return err
		}
		if len(res.Applied) > 0 {
			a.log.Info("database migrated", "from", res.From, "to", res.To)
		}
	}
	if err := dbx.CheckSchema(ctx, a.Pool, false); err != nil {
		return err
	}
	if err := checkObjectStore(ctx, a.Store, a.cfg.Database.ConnectTimeout); err != nil {
		return err
	}

	pingRedis(ctx, a.Redis, a.Health, a.log)
	a.Supervisor.Add(supervisor.Task{Name: "redis monitor", Run: func(ctx context.Context) error {
		return monitorRedis(ctx, a.Redis, a.Health, a.log)
	}})
	if a.role.Control() {
		for _, t := range a.Sweeps.Tasks() {
			a.Supervisor.Add(t)
		}
		a.Supervisor.Add(supervisor.Task{Name: "drive connection authorizations", Run: a.Connections.RunDriver})
		a.Supervisor.Add(supervisor.Task{Name: "deliver outbox", Run: a.Outbox.Run})
	}
	if a.Worker != nil {
		a.Supervisor.Add(supervisor.Task{Name: "execute runs", Run: a.Worker.Run})
	}
	a.Supervisor.Start(context.WithoutCancel(ctx))
	a.Health.MarkStarted()
	var metricsListen string
	if a.metricsLn != nil {
		metricsListen = a.metricsLn.Addr().String()
	}
	host, _ := os.Hostname()
	a.log.Info("svc ready", "role", string(a.role), "replica_id", a.ReplicaID, "host", host, "pid", os.Getpid(),
		"listen", a.ln.Addr().String(), "metrics_listen", metricsListen,
		"version", buildinfo.Version, "schema", schema.Version(), "sweeps", append(a.Sweeps.Sweeps(), outbox.DeliverPass, outbox.ObservePass),
		"startup_ms", time.Since(began).Milliseconds())
	return nil
}

func serve(srv *http.Server, ln net.Listener) error {
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Addr is the API listener's address (useful with port 0).
func (a *App) Addr() net.Addr { return a.ln.Addr() }

// MetricsAddr is the metrics listener's address, or nil when metrics are off.
func (a *App) MetricsAddr() net.Addr {
	if a.metricsLn == nil {
		return nil
	}
	return a.metricsLn.Addr()
}

// Wait blocks until ctx ends (a signal) or a listener fails.
func (a *App) Wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case err := <-a.serveErr:
		if err != nil {
			return fmt.Errorf("http server: %w", err)
		}
		return errors.New("http server stopped")
	}
}

// Shutdown stops in order: readiness drops, the listeners stop accepting and
// in-flight requests finish, background tasks stop, then connections close. It
// is bounded by server.shutdown_timeout and safe after a failed Start.
func (a *App) Shutdown() error {
	timeout := a.cfg.Server.ShutdownTimeout
	if drain := time.Duration(a.cfg.Worker.DrainSeconds)*time.Second + 10*time.Second; a.Worker != nil && drain > timeout {
		// A draining worker hands its runs off within worker.drain_seconds.
		timeout = drain
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	a.Health.MarkStopping()
	var errs []error
	if a.httpSrv != nil {
		errs = append(errs, a.httpSrv.Shutdown(ctx))
	} else if a.ln != nil {
		errs = append(errs, a.ln.Close())
	}
	if a.metricsSrv != nil {
		errs = append(errs, a.metricsSrv.Shutdown(ctx))
	}
	errs = append(errs, a.Supervisor.Stop(ctx))
	// After the worker drained: its attempts' spans have ended.
	errs = append(errs, a.Tracing.Shutdown(ctx))
	errs = append(errs, a.Redis.Close())
	a.Pool.Close()
	return errors.Join(errs...)
}

// Run runs a process until ctx ends, then shuts it down.
func Run(ctx context.Context, cfg *config.Config, role Role, log *slog.Logger) error {
	a, err := New(ctx, cfg, role, log)
	if err != nil {
		return err
	}
	if err := a.Start(ctx); err != nil {
		_ = a.Shutdown()
		if ctx.Err() != nil {
			// A signal during start-up (waiting for the migration lock, say) is a
			// requested stop, not a failure.
			log.Info("svc stopping", "role", string(role), "during", "start-up")
			return nil
		}
		return err
	}
	waitErr := a.Wait(ctx)
	log.Info("svc stopping", "role", string(role))
	if err := a.Shutdown(); err != nil {
		log.Warn("unclean shutdown", "error", err.Error())
	}
	return waitErr
}

// registerSweeps registers the maintenance sweeps
// (docs/decisions/0004-sweeps-and-supervision.md); control and all processes
// run them.
func (a *App) registerSweeps() {
	a.Sweeps.Register(sweep.Sweep{
		Name:     "expire_credentials",
		Interval: time.Duration(a.cfg.Auth.ExpiryScanSeconds) * time.Second,
		Run: func(ctx context.Context) error {
			res, err := credexpiry.Expire(ctx, a.Pool)
			if n := res.LoginSessions + res.MailLinks + res.InvitationConfirmations + res.Invitations; n > 0 {
				a.log.Info("expired credentials deleted", "login_sessions", res.LoginSessions, "mail_links", res.MailLinks,
					"invitation_confirmations", res.InvitationConfirmations, "invitations", res.Invitations)
			}
			return err
		},
	})
	a.Sweeps.Register(sweep.Sweep{
		Name:     "purge_asset_uploads",
		Interval: time.Duration(a.cfg.Control.ScanSeconds) * 12 * time.Second,
		Run: func(ctx context.Context) error {
			n, err := a.Assets.PurgeStaleUploads(ctx, asset.StaleUploadAge)
			if n > 0 {
				a.log.Info("abandoned asset uploads purged", "count", n)
			}
			return err
		},
	})
	a.Sweeps.Register(sweep.Sweep{
		Name:     "recover_connection_operations",
		Interval: time.Duration(a.cfg.Providers.OperationScanSeconds) * time.Second,
		Run: func(ctx context.Context) error {
			res, err := a.Connections.Recover(ctx)
			if res.Expired+res.Adopted > 0 {
				a.log.Info("connection authorizations recovered", "expired", res.Expired, "adopted", res.Adopted)
			}
			return err
		},
	})
	a.Sweeps.Register(sweep.Sweep{
		Name:     "purge_outbox",
		Interval: time.Duration(a.cfg.Outbox.PurgeIntervalSeconds) * time.Second,
		Run: func(ctx context.Context) error {
			n, err := outbox.Purge(ctx, a.Pool, a.cfg.Outbox)
			if n > 0 {
				a.log.Info("settled outbox deliveries purged", "count", n)
			}
			return err
		},
	})
	a.Sweeps.Register(sweep.Sweep{
		Name:     "expire_leases",
		Interval: time.Duration(a.cfg.Worker.AuthoritySeconds) * time.Second,
		Run: func(ctx context.Context) error {
			n, err := a.Runs.ExpireLeases(ctx)
			if n > 0 {
				a.log.Info("expired run leases ended", "count", n)
			}
			return err
		},
	})
	envScan := time.Duration(a.cfg.Environments.ScanSeconds) * time.Second
	a.Sweeps.Register(sweep.Sweep{
		Name: "maintain_environments", Interval: envScan,
		Run: func(ctx context.Context) error {
			_, err := a.EnvironmentRuntime.Maintain(ctx)
			return err
		},
	})
	a.Sweeps.Register(sweep.Sweep{
		Name: "renew_environments", Interval: envScan,
		Run: func(ctx context.Context) error {
			_, err := a.EnvironmentRuntime.Renew(ctx, hosted.Types())
			return err
		},
	})
	a.Sweeps.Register(sweep.Sweep{
		Name: "expire_approvals", Interval: time.Duration(a.cfg.Control.ScanSeconds) * time.Second,
		Run: func(ctx context.Context) error {
			n, err := a.Runs.ExpireApprovals(ctx)
			if n > 0 {
				a.log.Info("tool approvals timed out", "count", n)
			}
			return err
		},
	})
	a.Sweeps.Register(sweep.Sweep{
		Name: "advance_threads", Interval: time.Duration(a.cfg.Control.ScanSeconds) * time.Second,
		Run: func(ctx context.Context) error {
			n, err := a.Runs.AdvanceThreads(ctx)
			if n > 0 {
				a.log.Info("idle threads advanced", "count", n)
			}
			return err
		},
	})
	a.Sweeps.Register(sweep.Sweep{
		Name:     "purge_idempotency_keys",
		Interval: time.Duration(a.cfg.Control.ScanSeconds) * 12 * time.Second,
		Run: func(ctx context.Context) error {
			n, err := idempotency.Purge(ctx, a.Pool)
			if n > 0 {
				a.log.Info("expired idempotency keys deleted", "count", n)
			}
			return err
		},
	})
}

// countOutboxPass counts a pass of the outbox engine (deliver_outbox or
// observe_outbox) as the sweeps' passes are counted, under its name.
func (a *App) countOutboxPass(p outbox.Pass) {
	result := "ok"
	if p.Err != nil {
		result = "error"
	}
	a.Metrics.SweepPasses.WithLabelValues(p.Name, result).Inc()
	a.Metrics.SweepDuration.WithLabelValues(p.Name).Observe(p.Took.Seconds())
}

// registerDeliverers gives the outbox engine a deliverer for each kind this
// build delivers.
func (a *App) registerDeliverers() error {
	mailer, err := mail.NewDeliverer(a.cfg.Mail, a.Keyring, a.log)
	if err != nil {
		return err
	}
	a.Outbox.Register(outbox.KindIdentityMail, mailer)
	a.Outbox.Register(outbox.KindWebhook, webhook.NewDeliverer(a.Pool, a.Keyring, a.Policy,
		webhook.WithConnectTimeout(time.Duration(a.cfg.Outbox.WebhookConnectTimeoutSeconds)*time.Second),
		webhook.WithResponseTimeout(time.Duration(a.cfg.Outbox.WebhookResponseTimeoutSeconds)*time.Second)))
	vendorTimeout := time.Duration(a.cfg.Providers.ProbeTimeoutSeconds) * time.Second
	a.Outbox.Register(outbox.KindMemoryNamespacePurge, memory.NewPurger(a.Pool, a.Keyring, a.Types, a.Policy, vendorTimeout))
	a.Outbox.Register(outbox.KindCheckpointCleanup, checkpoint.NewCleaner(a.Store))
	a.Outbox.Register(outbox.KindSubagentResult, run.NewSubagentResults(a.Pool))
	return nil
}

// replicaID names this process in claims, leases, attempts and connection
// operations, which tenants can see: a new random id per start, never the
// host name. The start-up log line maps it to the host and pid.
func replicaID() string {
	return id.New(id.Replica)
}

// checkObjectStore refuses to start against an object store that does not
// answer, or cannot be written to, within timeout: a missing bucket or
// directory, or wrong keys, are configuration errors best reported at once.
// Once started, a lost store only degrades /readyz (see health.Checker).
func checkObjectStore(ctx context.Context, store objectstore.Store, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := store.Check(ctx); err != nil {
		return fmt.Errorf("object_store.url: %w", err)
	}
	return nil
}

// listenError says why the address of key could not be listened on. An
// address another process holds is the usual case of a control and a worker
// process on one host, which share a configuration file but each need an
// address of their own: the message names the key and its variable.
func listenError(key, addr string, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		env := "SVC_" + strings.ToUpper(strings.ReplaceAll(key, ".", "__"))
		return fmt.Errorf("listen on %s %q: another process holds this address; each svc process on one host "+
			"(a control and a worker, say) needs its own %s: set it in this process's configuration, "+
			"or as %s (for example %s=127.0.0.1:8081): %w", key, addr, key, env, env, err)
	}
	return fmt.Errorf("listen on %s %q: %w", key, addr, err)
}
