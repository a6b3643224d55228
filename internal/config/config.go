// Package config resolves svc's typed configuration once per process.
//
// Three layers are merged with koanf, each replacing what the previous one set:
// the built-in defaults (Default), an optional TOML file, and environment
// variables named SVC_SECTION__KEY. Every layer is checked against the Config
// struct by reflection before it is merged, so an unknown key, section or
// outbox kind, or a value of the wrong type, fails Load with the key and the
// file or variable that carried it. docs/configuration.md lists every key; a
// test keeps it in step with Keys.
package config

import "time"

// Config is the whole process configuration. The koanf tags are the TOML keys.
type Config struct {
	Server         Server         `koanf:"server"`
	Database       Database       `koanf:"database"`
	Redis          Redis          `koanf:"redis"`
	ObjectStore    ObjectStore    `koanf:"object_store"`
	Encryption     Encryption     `koanf:"encryption"`
	Auth           Auth           `koanf:"auth"`
	Control        Control        `koanf:"control"`
	Worker         Worker         `koanf:"worker"`
	Environments   Environments   `koanf:"environments"`
	Providers      Providers      `koanf:"providers"`
	Outbox         Outbox         `koanf:"outbox"`
	Mail           Mail           `koanf:"mail"`
	EndpointPolicy EndpointPolicy `koanf:"endpoint_policy"`
	Limits         Limits         `koanf:"limits"`
	Log            Log            `koanf:"log"`
	Metrics        Metrics        `koanf:"metrics"`
	Tracing        Tracing        `koanf:"tracing"`
}

// Server configures the public HTTP listener.
type Server struct {
	Listen            string        `koanf:"listen"`
	PublicURL         string        `koanf:"public_url"`
	ReadinessTimeout  time.Duration `koanf:"readiness_timeout"`
	ShutdownTimeout   time.Duration `koanf:"shutdown_timeout"`
	ReadHeaderTimeout time.Duration `koanf:"read_header_timeout"`
	IdleTimeout       time.Duration `koanf:"idle_timeout"`
	// MaxHeaderBytes bounds a request's header section (request line included).
	MaxHeaderBytes int `koanf:"max_header_bytes"`
	// BodyReadTimeout is how far an authenticated request body may fall
	// behind BodyMinBytesPerSecond: it must arrive within this plus its
	// size divided by that rate.
	BodyReadTimeout       time.Duration `koanf:"body_read_timeout"`
	BodyMinBytesPerSecond int64         `koanf:"body_min_bytes_per_second"`
	// UnauthenticatedBodyTimeout is the time the body of a request without
	// credentials in its headers has to arrive whole.
	UnauthenticatedBodyTimeout time.Duration `koanf:"unauthenticated_body_timeout"`
	// TrustedProxies lists the CIDR prefixes of reverse proxies whose
	// X-Forwarded-For header names the client address; empty trusts none, and
	// the client address is the connection's peer.
	TrustedProxies []string `koanf:"trusted_proxies"`
	// CORSAllowedOrigins lists the origins (scheme://host[:port]) whose
	// browser pages may call the API across origins; empty answers no CORS
	// headers at all (docs/decisions/0053-cors.md).
	CORSAllowedOrigins []string `koanf:"cors_allowed_origins"`
}

// Database configures the Postgres pool and migrations.
type Database struct {
	URL                          string        `koanf:"url" secret:"true"`
	MaxConns                     int           `koanf:"max_conns"`
	ConnectTimeout               time.Duration `koanf:"connect_timeout"`
	AutoMigrate                  bool          `koanf:"auto_migrate"`
	MigrationAdvisoryLockTimeout time.Duration `koanf:"migration_advisory_lock_timeout"`
}

// Redis configures the Redis client.
type Redis struct {
	URL       string `koanf:"url" secret:"true"`
	KeyPrefix string `koanf:"key_prefix"`
}

// ObjectStore configures where assets are stored. URL is file://DIR (DIR is
// everything after "file://", relative paths allowed) or s3://BUCKET[/PREFIX].
type ObjectStore struct {
	URL             string `koanf:"url"`
	Endpoint        string `koanf:"endpoint"`
	Region          string `koanf:"region"`
	AccessKeyID     string `koanf:"access_key_id" secret:"true"`
	SecretAccessKey string `koanf:"secret_access_key" secret:"true"`
	UseTLS          bool   `koanf:"use_tls"`
	// PathStyle puts the bucket in the URL path rather than the host name,
	// which S3-compatible servers (MinIO, versitygw, Ceph) expect.
	PathStyle bool `koanf:"path_style"`
}

// Encryption locates the key ring. An empty KeyFile passes Validate; the
// commands that need the key ring refuse to start without it.
type Encryption struct {
	KeyFile string `koanf:"key_file"`
}

// Auth configures sessions, invitations and mailed links.
type Auth struct {
	ExpiryScanSeconds    int `koanf:"expiry_scan_seconds"`
	InvitationTTLSeconds int `koanf:"invitation_ttl_seconds"`
	// InvitationConfirmationTTLSeconds is how long the link mailed to confirm
	// an invitation's acceptance by a new address works.
	InvitationConfirmationTTLSeconds int `koanf:"invitation_confirmation_ttl_seconds"`
	SessionTTLSeconds                int `koanf:"session_ttl_seconds"`
	MailLinkTTLSeconds               int `koanf:"mail_link_ttl_seconds"`
}

// Control configures the control role's sweeps.
type Control struct {
	ScanSeconds int `koanf:"scan_seconds"`
}

// Worker configures the worker role.
type Worker struct {
	Slots            int `koanf:"slots"`
	MaxAttempts      int `koanf:"max_attempts"`
	DrainSeconds     int `koanf:"drain_seconds"`
	AuthoritySeconds int `koanf:"authority_seconds"`
	LeaseSeconds     int `koanf:"lease_seconds"`
	// Subagent delegation bounds, per root run (docs/decisions/0037).
	SubagentMaxDepth        int `koanf:"subagent_max_depth"`
	SubagentMaxLiveChildren int `koanf:"subagent_max_live_children"`
	SubagentMaxDescendants  int `koanf:"subagent_max_descendants"`
	// WorkspaceMaxRunning bounds the runs of one workspace running at once,
	// counted in the database over every worker: claims skip a workspace
	// that has as many, and its runs wait.
	WorkspaceMaxRunning int `koanf:"workspace_max_running"`
	// ClaimGatherMS is how long, while runs wait, a freed slot waits for
	// more to free before the worker claims (docs/decisions/0047).
	ClaimGatherMS int `koanf:"claim_gather_ms"`
	// ApprovalTimeoutSeconds is how long a tool call waits for a person's
	// decision when its agent's tool policy does not say (docs/decisions/0052).
	ApprovalTimeoutSeconds int `koanf:"approval_timeout_seconds"`
}

// Environments configures execution environments.
type Environments struct {
	LocalEnabled   bool `koanf:"local_enabled"`
	ScanSeconds    int  `koanf:"scan_seconds"`
	RenewalSeconds int  `koanf:"renewal_seconds"`
	// DockerNetworks lists the engine networks a docker provider's `network`
	// may name (exact names, `host` and `container:<name>` included); empty
	// allows only none.
	DockerNetworks []string `koanf:"docker_networks"`
	// DockerAllowRoot lets a docker template run as root or as a user name
	// (which the image may map to root), and drops no-new-privileges.
	DockerAllowRoot bool `koanf:"docker_allow_root"`
}

// Providers configures model provider operations.
type Providers struct {
	OperationScanSeconds int `koanf:"operation_scan_seconds"`
	ProbeTimeoutSeconds  int `koanf:"probe_timeout_seconds"`
}

// Outbox configures outbox delivery and purging. Use Policy to get the
// effective per-kind settings rather than reading Defaults or ByKind directly.
type Outbox struct {
	PurgeIntervalSeconds int `koanf:"purge_interval_seconds"`
	PurgeBatch           int `koanf:"purge_batch"`
	PurgeBudgetSeconds   int `koanf:"purge_budget_seconds"`
	// WebhookInFlightPerSubscription bounds the webhook deliveries of one
	// subscription leased at once, across every control replica.
	WebhookInFlightPerSubscription int `koanf:"webhook_in_flight_per_subscription"`
	// WebhookConnectTimeoutSeconds bounds connecting to a webhook endpoint;
	// WebhookResponseTimeoutSeconds bounds the wait for its answer's first
	// byte (the whole attempt stays within 15 seconds).
	WebhookConnectTimeoutSeconds  int `koanf:"webhook_connect_timeout_seconds"`
	WebhookResponseTimeoutSeconds int `koanf:"webhook_response_timeout_seconds"`
	// WebhookSlowAttemptMS is how long a webhook attempt runs before it gives
	// its parallel slot to the next delivery; at most WebhookSlowAttempts such
	// slow attempts run per process besides the parallel ones.
	WebhookSlowAttemptMS int `koanf:"webhook_slow_attempt_ms"`
	WebhookSlowAttempts  int `koanf:"webhook_slow_attempts"`
	// WebhookEndpointFailures is the number of consecutive failed attempts
	// after which a subscription's endpoint is backed off as a whole.
	WebhookEndpointFailures int                       `koanf:"webhook_endpoint_failures"`
	Defaults                OutboxPolicy              `koanf:"defaults"`
	ByKind                  map[string]OutboxOverride `koanf:"by_kind"`
}

// OutboxPolicy is the complete delivery policy for one outbox kind.
type OutboxPolicy struct {
	DeliveredRetentionSeconds int `koanf:"delivered_retention_seconds"`
	DeadRetentionSeconds      int `koanf:"dead_retention_seconds"`
	MaxAttempts               int `koanf:"max_attempts"`
	Batch                     int `koanf:"batch"`
	Parallel                  int `koanf:"parallel"`
	LeaseSeconds              int `koanf:"lease_seconds"`
	BacklogCount              int `koanf:"backlog_count"`
	BacklogAgeSeconds         int `koanf:"backlog_age_seconds"`
	BacklogAlertSeconds       int `koanf:"backlog_alert_seconds"`
}

// OutboxOverride holds the OutboxPolicy fields one kind overrides; nil inherits.
type OutboxOverride struct {
	DeliveredRetentionSeconds *int `koanf:"delivered_retention_seconds"`
	DeadRetentionSeconds      *int `koanf:"dead_retention_seconds"`
	MaxAttempts               *int `koanf:"max_attempts"`
	Batch                     *int `koanf:"batch"`
	Parallel                  *int `koanf:"parallel"`
	LeaseSeconds              *int `koanf:"lease_seconds"`
	BacklogCount              *int `koanf:"backlog_count"`
	BacklogAgeSeconds         *int `koanf:"backlog_age_seconds"`
	BacklogAlertSeconds       *int `koanf:"backlog_alert_seconds"`
}

// Mail configures outgoing mail.
type Mail struct {
	Transport    string `koanf:"transport"`
	From         string `koanf:"from"`
	FileDir      string `koanf:"file_dir"`
	SMTPHost     string `koanf:"smtp_host"`
	SMTPPort     int    `koanf:"smtp_port"`
	SMTPUsername string `koanf:"smtp_username"`
	SMTPPassword string `koanf:"smtp_password" secret:"true"`
	SMTPTLS      string `koanf:"smtp_tls"`
}

// EndpointPolicy restricts the URLs svc calls out to (webhooks, providers).
type EndpointPolicy struct {
	AllowHTTP       bool     `koanf:"allow_http"`
	AllowedPrefixes []string `koanf:"allowed_prefixes"`
	AllowedPorts    []int    `koanf:"allowed_ports"`
	// AllowAnyPort makes every port reachable, for development machines
	// whose local servers pick their ports.
	AllowAnyPort   bool     `koanf:"allow_any_port"`
	AllowedHosts   []string `koanf:"allowed_hosts"`
	AllowedSockets []string `koanf:"allowed_sockets"`
}

// Limits bounds request and asset sizes and request rates. Rate limits are
// counted in Redis; while Redis is unreachable they are not enforced.
type Limits struct {
	RequestBytes int64 `koanf:"request_bytes"`
	AssetBytes   int64 `koanf:"asset_bytes"`
	// SignInPerAccountPerClientPerMinute bounds console sign-in (and password
	// reset) attempts per e-mail address from one client address, so that one
	// client's failures do not lock the owner out from elsewhere.
	SignInPerAccountPerClientPerMinute int `koanf:"sign_in_per_account_per_client_per_minute"`
	// SignInPerAccountPerMinute bounds them per e-mail address from all clients
	// together: the ceiling on a guess spread over many addresses.
	SignInPerAccountPerMinute int `koanf:"sign_in_per_account_per_minute"`
	// SignInPerAddressPerMinute bounds them per client address.
	SignInPerAddressPerMinute int `koanf:"sign_in_per_address_per_minute"`
	// InvitationAcceptPerInvitationPerClientPerMinute bounds attempts to accept
	// one invitation (each checks or sets a password) from one client address.
	InvitationAcceptPerInvitationPerClientPerMinute int `koanf:"invitation_accept_per_invitation_per_client_per_minute"`
	// InvitationAcceptPerInvitationPerMinute bounds them per invitation from
	// all clients together.
	InvitationAcceptPerInvitationPerMinute int `koanf:"invitation_accept_per_invitation_per_minute"`
	// InvitationAcceptPerAddressPerMinute bounds acceptance attempts per
	// client address.
	InvitationAcceptPerAddressPerMinute int `koanf:"invitation_accept_per_address_per_minute"`
	// APIRequestsPerKeyPerMinute bounds API requests per API key; 0 disables it.
	APIRequestsPerKeyPerMinute int `koanf:"api_requests_per_key_per_minute"`
	// ModelOutputBytes bounds what one model answer carries (text,
	// reasoning and tool calls together); ToolArgumentsBytes bounds one
	// tool call's arguments. A run whose model outgrows either fails with
	// output_limit.
	ModelOutputBytes   int64 `koanf:"model_output_bytes"`
	ToolArgumentsBytes int64 `koanf:"tool_arguments_bytes"`
	// ToolResultWindowPercent is the share of a model's context window, in
	// percent, one tool result may take when sent to the model; a longer
	// one is shortened with a marker (docs/decisions/0051-context-fitting.md).
	ToolResultWindowPercent int `koanf:"tool_result_window_percent"`
	// SubscriptionsPerWorkspace bounds the webhook subscriptions of one workspace.
	SubscriptionsPerWorkspace int `koanf:"subscriptions_per_workspace"`
	// UnauthenticatedBodyBytes bounds the body of a request without
	// credentials in its headers (console forms, invitation acceptance).
	UnauthenticatedBodyBytes int64 `koanf:"unauthenticated_body_bytes"`
	// UnauthenticatedBodies bounds how many such bodies one process reads
	// at once; more are refused with 503 before they are read.
	UnauthenticatedBodies int `koanf:"unauthenticated_bodies"`
	// UnauthenticatedBodiesPerClient bounds how many of them one client
	// address holds at once (docs/decisions/0041).
	UnauthenticatedBodiesPerClient int `koanf:"unauthenticated_bodies_per_client"`
	// WorkspaceMaxWaitingRuns bounds a workspace's runs that wait for a
	// worker: a request that would start one more is refused (429).
	WorkspaceMaxWaitingRuns int `koanf:"workspace_max_waiting_runs"`
}

// Log configures the process logger.
type Log struct {
	Level  string `koanf:"level"`
	Format string `koanf:"format"`
}

// Metrics configures the Prometheus listener; an empty Listen turns it off.
// QueryTimeout bounds the database read behind the run queue's gauges at
// each scrape.
type Metrics struct {
	Listen       string        `koanf:"listen"`
	QueryTimeout time.Duration `koanf:"query_timeout"`
}

// Tracing configures OpenTelemetry tracing (package tracing); an empty
// OTLPEndpoint turns it off, and nothing is exported or recorded.
type Tracing struct {
	// OTLPEndpoint is the collector's URL (http:// or https://): spans go
	// to its /v1/traces over OTLP/HTTP, or, with Protocol "grpc", to its
	// OTLP gRPC service.
	OTLPEndpoint string `koanf:"otlp_endpoint"`
	// Protocol is "http/protobuf" or "grpc".
	Protocol string `koanf:"protocol"`
	// Headers are sent with every export, each "name=value" (a collector's
	// API key, say).
	Headers     []string `koanf:"headers" secret:"true"`
	ServiceName string   `koanf:"service_name"`
	// SampleRatio is the share of traces recorded that no caller decided
	// on (0 to 1); a trace a client or a run's origin sampled is recorded,
	// one it left out is not (docs/decisions/0059-tracing.md).
	SampleRatio float64 `koanf:"sample_ratio"`
	// ExportTimeout bounds one export; QueueSize bounds the spans waiting
	// to be exported, beyond which new spans are dropped.
	ExportTimeout time.Duration `koanf:"export_timeout"`
	QueueSize     int           `koanf:"queue_size"`
}

// Default returns the built-in configuration, suited to a single machine.
func Default() Config {
	return Config{
		Server: Server{
			Listen:            ":8080",
			PublicURL:         "http://localhost:8080",
			ReadinessTimeout:  2 * time.Second,
			ShutdownTimeout:   30 * time.Second,
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       120 * time.Second,
			MaxHeaderBytes:    64 << 10,
			BodyReadTimeout:   30 * time.Second,
			// 32 KiB/s: a 100 MiB asset may take up to 53 minutes.
			BodyMinBytesPerSecond:      32 << 10,
			UnauthenticatedBodyTimeout: 10 * time.Second,
			TrustedProxies:             []string{},
			CORSAllowedOrigins:         []string{},
		},
		Database: Database{
			URL:                          "postgres://postgres@127.0.0.1:5432/svc?sslmode=disable",
			MaxConns:                     20,
			ConnectTimeout:               10 * time.Second,
			AutoMigrate:                  true,
			MigrationAdvisoryLockTimeout: 60 * time.Second,
		},
		Redis: Redis{URL: "redis://127.0.0.1:6379/0", KeyPrefix: "svc:"},
		ObjectStore: ObjectStore{
			URL:       "file://data/objects",
			Region:    "us-east-1",
			UseTLS:    true,
			PathStyle: true,
		},
		Auth: Auth{
			ExpiryScanSeconds:                60,
			InvitationTTLSeconds:             604800,
			InvitationConfirmationTTLSeconds: 3600,
			SessionTTLSeconds:                1209600,
			MailLinkTTLSeconds:               3600,
		},
		Control: Control{ScanSeconds: 5},
		Worker: Worker{
			Slots:            4,
			MaxAttempts:      3,
			DrainSeconds:     30,
			AuthoritySeconds: 10,
			LeaseSeconds:     30,

			SubagentMaxDepth:        4,
			SubagentMaxLiveChildren: 8,
			SubagentMaxDescendants:  64,
			// One less than the default slots: one workspace never holds
			// every slot of a default worker.
			WorkspaceMaxRunning: 3,
			ClaimGatherMS:       50,
			// A day: a person may answer the next morning.
			ApprovalTimeoutSeconds: 86400,
		},
		Environments: Environments{ScanSeconds: 30, RenewalSeconds: 30, DockerNetworks: []string{}},
		Providers:    Providers{OperationScanSeconds: 30, ProbeTimeoutSeconds: 10},
		Outbox: Outbox{
			PurgeIntervalSeconds: 60,
			PurgeBatch:           1000,
			PurgeBudgetSeconds:   5,

			WebhookInFlightPerSubscription: 2,
			WebhookConnectTimeoutSeconds:   3,
			WebhookResponseTimeoutSeconds:  10,
			WebhookSlowAttemptMS:           500,
			WebhookSlowAttempts:            256,
			WebhookEndpointFailures:        3,
			Defaults: OutboxPolicy{
				DeliveredRetentionSeconds: 86400,
				DeadRetentionSeconds:      1209600,
				MaxAttempts:               12,
				Batch:                     32,
				Parallel:                  8,
				LeaseSeconds:              60,
				BacklogCount:              10000,
				BacklogAgeSeconds:         300,
				BacklogAlertSeconds:       300,
			},
			ByKind: map[string]OutboxOverride{},
		},
		Mail: Mail{
			Transport: "log",
			From:      "svc <noreply@localhost>",
			SMTPPort:  587,
			SMTPTLS:   "starttls",
		},
		EndpointPolicy: EndpointPolicy{AllowedPrefixes: []string{}, AllowedPorts: []int{}, AllowedHosts: []string{}, AllowedSockets: []string{}},
		Limits: Limits{
			RequestBytes:                                    1 << 20,
			AssetBytes:                                      100 << 20,
			SignInPerAccountPerClientPerMinute:              10,
			SignInPerAccountPerMinute:                       100,
			SignInPerAddressPerMinute:                       30,
			InvitationAcceptPerInvitationPerClientPerMinute: 10,
			InvitationAcceptPerInvitationPerMinute:          50,
			InvitationAcceptPerAddressPerMinute:             30,
			APIRequestsPerKeyPerMinute:                      6000,
			ModelOutputBytes:                                4 << 20,
			ToolArgumentsBytes:                              1 << 20,
			ToolResultWindowPercent:                         25,
			SubscriptionsPerWorkspace:                       20,
			UnauthenticatedBodyBytes:                        16 << 10,
			UnauthenticatedBodies:                           64,
			UnauthenticatedBodiesPerClient:                  8,
			WorkspaceMaxWaitingRuns:                         1000,
		},
		Log:     Log{Level: "info", Format: "json"},
		Metrics: Metrics{QueryTimeout: time.Second},
		Tracing: Tracing{
			Protocol:      "http/protobuf",
			Headers:       []string{},
			ServiceName:   "svc",
			SampleRatio:   1,
			ExportTimeout: 10 * time.Second,
			QueueSize:     2048,
		},
	}
}
