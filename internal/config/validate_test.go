package config

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidate(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name   string
		mutate func(c *Config)
		want   []string // substrings of the error; none means valid
		not    []string
	}{
		{name: "Default", mutate: func(*Config) {}},
		{name: "DrainZero", mutate: func(c *Config) { c.Worker.DrainSeconds = 0 }},
		{name: "PostgresqlScheme", mutate: func(c *Config) { c.Database.URL = "postgresql://db.internal/svc" }},
		{name: "Rediss", mutate: func(c *Config) { c.Redis.URL = "rediss://:pw@cache:6380/1" }},
		{name: "S3", mutate: func(c *Config) {
			c.ObjectStore.URL = "s3://assets/svc"
			c.ObjectStore.Endpoint = "minio:9000"
		}},
		{name: "SMTP", mutate: func(c *Config) { c.Mail.Transport = "smtp"; c.Mail.SMTPHost = "mail.example.com" }},
		{name: "EndpointPolicy", mutate: func(c *Config) {
			c.EndpointPolicy.AllowedPrefixes = []string{"10.0.0.0/8", "::1/128"}
			c.EndpointPolicy.AllowedPorts = []int{1, 65535}
		}},
		{name: "CORSOrigins", mutate: func(c *Config) {
			c.Server.CORSAllowedOrigins = []string{"https://app.example.com", "http://localhost:3000", "http://[::1]:8081"}
		}},
		{name: "CORSOriginsMalformed", mutate: func(c *Config) {
			c.Server.CORSAllowedOrigins = []string{"https://app.example.com/", "*", "app.example.com", "https://App.example.com",
				"https://app.example.com:443", "ftp://files.example.com", "https://user@app.example.com", "https://app.example.com/path"}
		}, want: []string{
			`server.cors_allowed_origins[0]: "https://app.example.com/" is not an origin`,
			`server.cors_allowed_origins[1]: "*" is not an origin`,
			`server.cors_allowed_origins[2]:`, `server.cors_allowed_origins[3]:`, `server.cors_allowed_origins[4]:`,
			`server.cors_allowed_origins[5]:`, `server.cors_allowed_origins[6]:`, `server.cors_allowed_origins[7]:`,
		}},
		{name: "Listen", mutate: func(c *Config) { c.Server.Listen = "8080" }, want: []string{`server.listen: must be host:port or :port, got "8080"`}},
		{name: "PublicURLRelative", mutate: func(c *Config) { c.Server.PublicURL = "localhost:8080" }, want: []string{"server.public_url: must be an absolute http or https URL"}},
		{name: "PublicURLScheme", mutate: func(c *Config) { c.Server.PublicURL = "ftp://example.com" }, want: []string{"server.public_url:"}},
		{name: "Duration", mutate: func(c *Config) { c.Server.ReadinessTimeout = 0 }, want: []string{"server.readiness_timeout: must be a positive duration"}},
		{name: "LockTimeout", mutate: func(c *Config) { c.Database.MigrationAdvisoryLockTimeout = -1 }, want: []string{"database.migration_advisory_lock_timeout:"}},
		{name: "DatabaseScheme", mutate: func(c *Config) { c.Database.URL = "mysql://u:hunter2@db/svc" }, want: []string{"database.url: scheme must be postgres or postgresql"}, not: []string{"hunter2"}},
		{name: "DatabaseUnparsable", mutate: func(c *Config) { c.Database.URL = "postgres://u:hunter2@db:port/svc" }, want: []string{"database.url: invalid URL"}, not: []string{"hunter2"}},
		{name: "DatabaseNoHost", mutate: func(c *Config) { c.Database.URL = "postgres:///svc" }, want: []string{"database.url: must name a host"}},
		{name: "MaxConns", mutate: func(c *Config) { c.Database.MaxConns = 0 }, want: []string{"database.max_conns: must be greater than 0, got 0"}},
		{name: "RedisScheme", mutate: func(c *Config) { c.Redis.URL = "http://cache:6379" }, want: []string{"redis.url: scheme must be redis or rediss"}},
		{name: "ObjectStoreScheme", mutate: func(c *Config) { c.ObjectStore.URL = "gs://bucket" }, want: []string{`object_store.url: scheme must be file or s3, got "gs"`}},
		{name: "ObjectStoreFileEmpty", mutate: func(c *Config) { c.ObjectStore.URL = "file://" }, want: []string{"object_store.url: file:// needs a directory"}},
		{name: "ObjectStoreS3", mutate: func(c *Config) { c.ObjectStore.URL = "s3:///prefix" }, want: []string{
			"object_store.url: s3:// needs a bucket name", "object_store.endpoint: is required",
		}},
		{name: "ObjectStoreS3Endpoint", mutate: func(c *Config) {
			c.ObjectStore.URL = "s3://assets"
			c.ObjectStore.Endpoint = "http://minio"
			c.ObjectStore.Region = ""
		}, want: []string{"object_store.endpoint: must be host:port", "object_store.region: is required"}},
		{name: "ObjectStoreS3Names", mutate: func(c *Config) {
			c.ObjectStore.URL = "s3://Assets_Bucket/../x?y=1"
			c.ObjectStore.Endpoint = "minio:9000"
			c.ObjectStore.AccessKeyID = "AKIAEXAMPLE"
		}, want: []string{
			`object_store.url: bucket "Assets_Bucket" is not an S3 bucket name`,
			`object_store.url: prefix "../x" must be segments`,
			"object_store.url: s3:// takes only a bucket and a prefix",
			"object_store.access_key_id: access_key_id and secret_access_key must be set together",
		}, not: []string{"AKIAEXAMPLE"}},
		{name: "ObjectStoreS3Keys", mutate: func(c *Config) {
			c.ObjectStore.URL = "s3://svc-assets/prod/v1"
			c.ObjectStore.Endpoint = "s3.eu-west-1.amazonaws.com:443"
			c.ObjectStore.AccessKeyID, c.ObjectStore.SecretAccessKey = "id", "secret"
			c.ObjectStore.PathStyle = false
		}},
		{name: "Auth", mutate: func(c *Config) { c.Auth.SessionTTLSeconds = -5 }, want: []string{"auth.session_ttl_seconds: must be greater than 0, got -5"}},
		{name: "Control", mutate: func(c *Config) { c.Control.ScanSeconds = 0 }, want: []string{"control.scan_seconds:"}},
		{name: "Worker", mutate: func(c *Config) {
			c.Worker.Slots = 0
			c.Worker.DrainSeconds = -1
		}, want: []string{"worker.slots: must be greater than 0", "worker.drain_seconds: must not be negative"}},
		{name: "Environments", mutate: func(c *Config) { c.Environments.RenewalSeconds = 0 }, want: []string{"environments.renewal_seconds:"}},
		{name: "Providers", mutate: func(c *Config) { c.Providers.ProbeTimeoutSeconds = 0 }, want: []string{"providers.probe_timeout_seconds:"}},
		{name: "OutboxPurge", mutate: func(c *Config) {
			c.Outbox.PurgeBatch = 0
			c.Outbox.PurgeBudgetSeconds = 0
		}, want: []string{"outbox.purge_batch:", "outbox.purge_budget_seconds:"}},
		{name: "OutboxDefaults", mutate: func(c *Config) { c.Outbox.Defaults.Parallel = 0 }, want: []string{"outbox.defaults.parallel: must be greater than 0"}},
		{name: "OutboxByKind", mutate: func(c *Config) {
			c.Outbox.ByKind = map[string]OutboxOverride{"webhook": {Batch: intPtr(0)}, "hooks": {}}
		}, want: []string{"outbox.by_kind.webhook.batch: must be greater than 0", `outbox.by_kind: unknown outbox kind "hooks"`}},
		{name: "MailTransport", mutate: func(c *Config) { c.Mail.Transport = "pigeon" }, want: []string{`mail.transport: must be one of log, file, smtp, got "pigeon"`}},
		{name: "MailFileDir", mutate: func(c *Config) { c.Mail.Transport = "file" }, want: []string{"mail.file_dir: is required"}},
		{name: "MailSMTPHost", mutate: func(c *Config) { c.Mail.Transport = "smtp" }, want: []string{"mail.smtp_host: is required"}},
		{name: "MailSMTPSettings", mutate: func(c *Config) {
			c.Mail.SMTPPort = 0
			c.Mail.SMTPTLS = "ssl"
		}, want: []string{"mail.smtp_port: must be a port", `mail.smtp_tls: must be one of starttls, tls, none, got "ssl"`}},
		{name: "MailFrom", mutate: func(c *Config) { c.Mail.From = "nobody" }, want: []string{"mail.from: must be a mail address"}},
		{name: "TrustedProxies", mutate: func(c *Config) { c.Server.TrustedProxies = []string{"10.0.0.0/8", "fd00::/8"} }},
		{name: "TrustedProxiesBad", mutate: func(c *Config) { c.Server.TrustedProxies = []string{"10.0.0.1"} }, want: []string{`server.trusted_proxies[0]: "10.0.0.1" is not a CIDR prefix`}},
		{name: "APIRateLimitOff", mutate: func(c *Config) { c.Limits.APIRequestsPerKeyPerMinute = 0 }},
		{name: "RateLimits", mutate: func(c *Config) {
			c.Limits.SignInPerAccountPerMinute = 0
			c.Limits.SignInPerAddressPerMinute = -1
			c.Limits.APIRequestsPerKeyPerMinute = -1
		}, want: []string{
			"limits.sign_in_per_account_per_minute: must be greater than 0, got 0",
			"limits.sign_in_per_address_per_minute: must be greater than 0, got -1",
			"limits.api_requests_per_key_per_minute: must not be negative, got -1",
		}},
		{name: "AllowedHosts", mutate: func(c *Config) {
			c.EndpointPolicy.AllowedHosts = []string{"ollama.internal", "*.corp.example", "http://x", "a b"}
		}, want: []string{`endpoint_policy.allowed_hosts[2]: "http://x" is not a host name or *.suffix`, `endpoint_policy.allowed_hosts[3]: "a b" is not a host name or *.suffix`}},
		{name: "AllowedSockets", mutate: func(c *Config) {
			c.EndpointPolicy.AllowedSockets = []string{"/var/run/docker.sock", "run/docker.sock", "/var/run/../docker.sock"}
		}, want: []string{`endpoint_policy.allowed_sockets[1]: "run/docker.sock" is not a clean absolute path`, `endpoint_policy.allowed_sockets[2]: "/var/run/../docker.sock" is not a clean absolute path`}},
		{name: "AllowedPrefixes", mutate: func(c *Config) { c.EndpointPolicy.AllowedPrefixes = []string{"10.0.0.0/8", "10.0.0.0/33"} }, want: []string{`endpoint_policy.allowed_prefixes[1]: "10.0.0.0/33" is not a CIDR prefix`}},
		{name: "AllowedPorts", mutate: func(c *Config) { c.EndpointPolicy.AllowedPorts = []int{0, 70000} }, want: []string{
			"endpoint_policy.allowed_ports[0]: must be a port from 1 to 65535, got 0", "endpoint_policy.allowed_ports[1]: must be a port from 1 to 65535, got 70000",
		}},
		{name: "Limits", mutate: func(c *Config) { c.Limits.RequestBytes = 0 }, want: []string{"limits.request_bytes: must be greater than 0"}},
		{name: "Log", mutate: func(c *Config) {
			c.Log.Level = "trace"
			c.Log.Format = "xml"
		}, want: []string{`log.level: must be one of debug, info, warn, error, got "trace"`, `log.format: must be one of json, text, got "xml"`}},
		{name: "MetricsListen", mutate: func(c *Config) { c.Metrics.Listen = "metrics" }, want: []string{"metrics.listen: must be host:port"}},
		{name: "MetricsSameAsServer", mutate: func(c *Config) { c.Metrics.Listen = c.Server.Listen }, want: []string{"metrics.listen: must differ from server.listen"}},
		{name: "MetricsQueryTimeout", mutate: func(c *Config) { c.Metrics.QueryTimeout = 0 }, want: []string{"metrics.query_timeout: must be a positive duration"}},
		{name: "Tracing", mutate: func(c *Config) {
			c.Tracing.OTLPEndpoint = "https://otel.example.com:4318"
			c.Tracing.Headers = []string{"Authorization=Bearer t0ken", "x-team = a=b"}
			c.Tracing.SampleRatio = 0
		}},
		{name: "TracingGRPC", mutate: func(c *Config) {
			c.Tracing.Protocol = "grpc"
			c.Tracing.OTLPEndpoint = "http://otel-collector:4317"
			c.Tracing.SampleRatio = 0.25
		}},
		{name: "TracingBad", mutate: func(c *Config) {
			c.Tracing.Protocol = "http/json"
			c.Tracing.Headers = []string{"Authorization: Bearer t0ken", "x=line\nbreak", "=nameless"}
			c.Tracing.ServiceName = " "
			c.Tracing.SampleRatio = 1.5
			c.Tracing.ExportTimeout = 0
			c.Tracing.QueueSize = 0
		}, want: []string{
			`tracing.protocol: must be one of http/protobuf, grpc, got "http/json"`,
			"tracing.headers[0]: must be name=value", "tracing.headers[1]: must be name=value", "tracing.headers[2]: must be name=value",
			"tracing.service_name: must not be empty",
			"tracing.sample_ratio: must be a number from 0 to 1, got 1.5",
			"tracing.export_timeout: must be a positive duration",
			"tracing.queue_size: must be 1 to 131072, got 0",
		}, not: []string{"t0ken", "break"}},
		{name: "TracingRatioNaN", mutate: func(c *Config) { c.Tracing.SampleRatio = math.NaN() }, want: []string{"tracing.sample_ratio: must be a number from 0 to 1"}},
		{name: "TracingQueueTooLarge", mutate: func(c *Config) { c.Tracing.QueueSize = 1 << 20 }, want: []string{"tracing.queue_size: must be 1 to 131072"}},
		{name: "TracingEndpointScheme", mutate: func(c *Config) { c.Tracing.OTLPEndpoint = "otel-collector:4318" }, want: []string{"tracing.otlp_endpoint: must be an http or https URL"}},
		{name: "TracingEndpointCredentials", mutate: func(c *Config) { c.Tracing.OTLPEndpoint = "https://user:hunter2@otel.example.com" },
			want: []string{"tracing.otlp_endpoint: must not carry credentials"}, not: []string{"hunter2"}},
		{name: "TracingEndpointQuery", mutate: func(c *Config) { c.Tracing.OTLPEndpoint = "http://otel:4318/?token=x" }, want: []string{"tracing.otlp_endpoint: must not have a query"}},
		{name: "TracingGRPCPath", mutate: func(c *Config) {
			c.Tracing.Protocol = "grpc"
			c.Tracing.OTLPEndpoint = "http://otel:4317/v1/traces"
		}, want: []string{"tracing.otlp_endpoint: a grpc endpoint has no path"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			c := Default()
			tt.mutate(&c)
			err := c.Validate()
			if len(tt.want) == 0 {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			lines := strings.Split(err.Error(), "\n")
			require.Len(t, lines, len(tt.want), "one line per problem: %v", err)
			for _, want := range tt.want {
				require.Contains(t, err.Error(), want)
			}
			for _, not := range tt.not {
				require.NotContains(t, err.Error(), not)
			}
		})
	}
}
