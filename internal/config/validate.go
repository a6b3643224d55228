package config

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/mail"
	"net/netip"
	"net/url"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Validate reports every invalid value, joined with errors.Join, each message
// starting with its key. It never repeats a secret or a URL that may carry a
// password.
// allowedHostPattern is a DNS name, optionally "*." for every name under it.
var allowedHostPattern = regexp.MustCompile(`^(?i)(\*\.)?[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*\.?$`)

func (c *Config) Validate() error {
	v := &validator{}

	s := c.Server
	v.hostPort("server.listen", s.Listen)
	v.httpURL("server.public_url", s.PublicURL)
	v.duration("server.readiness_timeout", s.ReadinessTimeout)
	v.duration("server.shutdown_timeout", s.ShutdownTimeout)
	v.duration("server.read_header_timeout", s.ReadHeaderTimeout)
	v.duration("server.idle_timeout", s.IdleTimeout)
	v.positive("server.max_header_bytes", s.MaxHeaderBytes)
	v.duration("server.body_read_timeout", s.BodyReadTimeout)
	v.positive64("server.body_min_bytes_per_second", s.BodyMinBytesPerSecond)
	v.duration("server.unauthenticated_body_timeout", s.UnauthenticatedBodyTimeout)
	v.prefixes("server.trusted_proxies", s.TrustedProxies)
	v.origins("server.cors_allowed_origins", s.CORSAllowedOrigins)

	d := c.Database
	v.urlScheme("database.url", d.URL, "postgres", "postgresql")
	v.positive("database.max_conns", d.MaxConns)
	v.duration("database.connect_timeout", d.ConnectTimeout)
	v.duration("database.migration_advisory_lock_timeout", d.MigrationAdvisoryLockTimeout)

	v.urlScheme("redis.url", c.Redis.URL, "redis", "rediss")

	v.objectStore(c.ObjectStore)

	a := c.Auth
	v.positive("auth.expiry_scan_seconds", a.ExpiryScanSeconds)
	v.positive("auth.invitation_ttl_seconds", a.InvitationTTLSeconds)
	v.positive("auth.invitation_confirmation_ttl_seconds", a.InvitationConfirmationTTLSeconds)
	v.positive("auth.session_ttl_seconds", a.SessionTTLSeconds)
	v.positive("auth.mail_link_ttl_seconds", a.MailLinkTTLSeconds)

	v.positive("control.scan_seconds", c.Control.ScanSeconds)

	w := c.Worker
	v.positive("worker.slots", w.Slots)
	v.positive("worker.max_attempts", w.MaxAttempts)
	v.nonNegative("worker.drain_seconds", w.DrainSeconds)
	v.positive("worker.authority_seconds", w.AuthoritySeconds)
	v.positive("worker.lease_seconds", w.LeaseSeconds)
	v.positive("worker.subagent_max_depth", w.SubagentMaxDepth)
	v.positive("worker.subagent_max_live_children", w.SubagentMaxLiveChildren)
	v.positive("worker.subagent_max_descendants", w.SubagentMaxDescendants)
	v.positive("worker.workspace_max_running", w.WorkspaceMaxRunning)
	v.nonNegative("worker.claim_gather_ms", w.ClaimGatherMS)
	// A week, as an agent's tool_policy.approval_timeout_seconds.
	if w.ApprovalTimeoutSeconds < 1 || w.ApprovalTimeoutSeconds > 7*86400 {
		v.fail("worker.approval_timeout_seconds", "must be 1 to %d (a week)", 7*86400)
	}

	v.positive("environments.scan_seconds", c.Environments.ScanSeconds)
	v.positive("environments.renewal_seconds", c.Environments.RenewalSeconds)
	for i, n := range c.Environments.DockerNetworks {
		if n == "" || strings.ContainsFunc(n, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			v.fail(fmt.Sprintf("environments.docker_networks[%d]", i), "%q is not a network name", n)
		}
	}

	v.positive("providers.operation_scan_seconds", c.Providers.OperationScanSeconds)
	v.positive("providers.probe_timeout_seconds", c.Providers.ProbeTimeoutSeconds)

	v.outbox(c.Outbox)
	v.mail(c.Mail)

	v.prefixes("endpoint_policy.allowed_prefixes", c.EndpointPolicy.AllowedPrefixes)
	for i, p := range c.EndpointPolicy.AllowedPorts {
		v.port(fmt.Sprintf("endpoint_policy.allowed_ports[%d]", i), p)
	}
	for i, h := range c.EndpointPolicy.AllowedHosts {
		if !allowedHostPattern.MatchString(h) {
			v.fail(fmt.Sprintf("endpoint_policy.allowed_hosts[%d]", i), "%q is not a host name or *.suffix", h)
		}
	}
	for i, s := range c.EndpointPolicy.AllowedSockets {
		if !filepath.IsAbs(s) || filepath.Clean(s) != s {
			v.fail(fmt.Sprintf("endpoint_policy.allowed_sockets[%d]", i), "%q is not a clean absolute path", s)
		}
	}

	v.positive64("limits.request_bytes", c.Limits.RequestBytes)
	v.positive64("limits.asset_bytes", c.Limits.AssetBytes)
	v.positive("limits.sign_in_per_account_per_client_per_minute", c.Limits.SignInPerAccountPerClientPerMinute)
	v.positive("limits.sign_in_per_account_per_minute", c.Limits.SignInPerAccountPerMinute)
	v.positive("limits.sign_in_per_address_per_minute", c.Limits.SignInPerAddressPerMinute)
	v.positive("limits.invitation_accept_per_invitation_per_client_per_minute", c.Limits.InvitationAcceptPerInvitationPerClientPerMinute)
	v.positive("limits.invitation_accept_per_invitation_per_minute", c.Limits.InvitationAcceptPerInvitationPerMinute)
	v.positive("limits.invitation_accept_per_address_per_minute", c.Limits.InvitationAcceptPerAddressPerMinute)
	v.nonNegative("limits.api_requests_per_key_per_minute", c.Limits.APIRequestsPerKeyPerMinute)
	v.positive64("limits.model_output_bytes", c.Limits.ModelOutputBytes)
	v.positive64("limits.tool_arguments_bytes", c.Limits.ToolArgumentsBytes)
	if p := c.Limits.ToolResultWindowPercent; p < 1 || p > 100 {
		v.fail("limits.tool_result_window_percent", "must be 1 to 100")
	}
	if c.Limits.ModelOutputBytes > maxModelOutputBytes {
		v.fail("limits.model_output_bytes", "must be at most %d (32 MiB)", maxModelOutputBytes)
	}
	v.positive("limits.subscriptions_per_workspace", c.Limits.SubscriptionsPerWorkspace)
	v.positive64("limits.unauthenticated_body_bytes", c.Limits.UnauthenticatedBodyBytes)
	v.positive("limits.unauthenticated_bodies", c.Limits.UnauthenticatedBodies)
	v.positive("limits.unauthenticated_bodies_per_client", c.Limits.UnauthenticatedBodiesPerClient)
	v.positive("limits.workspace_max_waiting_runs", c.Limits.WorkspaceMaxWaitingRuns)

	v.oneOf("log.level", c.Log.Level, "debug", "info", "warn", "error")
	v.oneOf("log.format", c.Log.Format, "json", "text")

	v.duration("metrics.query_timeout", c.Metrics.QueryTimeout)
	if c.Metrics.Listen != "" {
		v.hostPort("metrics.listen", c.Metrics.Listen)
		// Port 0 picks a free port for each listener, so equal ":0" addresses never collide.
		if c.Metrics.Listen == s.Listen && !strings.HasSuffix(s.Listen, ":0") {
			v.fail("metrics.listen", "must differ from server.listen")
		}
	}
	v.tracing(c.Tracing)
	return errors.Join(v.errs...)
}

type validator struct{ errs []error }

// maxModelOutputBytes bounds limits.model_output_bytes: an answer must fit,
// with the conversation before it, in a checkpoint the worker reads back
// (at most 64 MiB).
const maxModelOutputBytes = 32 << 20

func (v *validator) fail(key, format string, args ...any) {
	v.errs = append(v.errs, errors.New(key+": "+fmt.Sprintf(format, args...)))
}

func (v *validator) positive(key string, n int) {
	if n <= 0 {
		v.fail(key, "must be greater than 0, got %d", n)
	}
}

func (v *validator) positive64(key string, n int64) {
	if n <= 0 {
		v.fail(key, "must be greater than 0, got %d", n)
	}
}

func (v *validator) nonNegative(key string, n int) {
	if n < 0 {
		v.fail(key, "must not be negative, got %d", n)
	}
}

func (v *validator) prefixes(key string, list []string) {
	for i, p := range list {
		if _, err := netip.ParsePrefix(p); err != nil {
			v.fail(fmt.Sprintf("%s[%d]", key, i), "%q is not a CIDR prefix such as \"10.0.0.0/8\"", p)
		}
	}
}

// origins checks that each entry is a browser origin as the Origin header
// carries it: http or https, a host, an optional port, and nothing else
// (no path, query, fragment, user or trailing slash; lowercase).
func (v *validator) origins(key string, list []string) {
	for i, o := range list {
		if !isOrigin(o) {
			v.fail(fmt.Sprintf("%s[%d]", key, i), "%q is not an origin such as \"https://app.example.com\" or \"http://localhost:3000\" (scheme://host[:port], lowercase, no default port, no path)", o)
		}
	}
}

func isOrigin(s string) bool {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.Path != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "" {
		return false
	}
	if strings.HasSuffix(u.Host, ":") {
		return false
	}
	// Browsers leave a scheme's default port out of Origin, so an origin
	// that names it would never match.
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port ||
			(u.Scheme == "http" && n == 80) || (u.Scheme == "https" && n == 443) {
			return false
		}
	}
	return u.Hostname() != "" && s == strings.ToLower(s) && s == u.Scheme+"://"+u.Host
}

func (v *validator) duration(key string, d time.Duration) {
	if d <= 0 {
		v.fail(key, "must be a positive duration, got %s", d)
	}
}

func (v *validator) port(key string, p int) {
	if p < 1 || p > 65535 {
		v.fail(key, "must be a port from 1 to 65535, got %d", p)
	}
}

func (v *validator) oneOf(key, value string, allowed ...string) {
	if !slices.Contains(allowed, value) {
		v.fail(key, "must be one of %s, got %q", strings.Join(allowed, ", "), value)
	}
}

func (v *validator) hostPort(key, addr string) {
	_, port, err := net.SplitHostPort(addr)
	if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 0 || n > 65535 {
		v.fail(key, "must be host:port or :port, got %q", addr)
	}
}

// parseURL parses without echoing the URL: url.Parse errors quote it whole,
// password included.
func parseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			return nil, ue.Err
		}
		return nil, errors.New("malformed URL")
	}
	return u, nil
}

func (v *validator) urlScheme(key, raw string, schemes ...string) {
	u, err := parseURL(raw)
	switch {
	case err != nil:
		v.fail(key, "invalid URL: %v", err)
	case !slices.Contains(schemes, u.Scheme):
		v.fail(key, "scheme must be %s", strings.Join(schemes, " or "))
	case u.Host == "":
		v.fail(key, "must name a host")
	}
}

func (v *validator) httpURL(key, raw string) {
	u, err := parseURL(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.fail(key, "must be an absolute http or https URL, got %q", raw)
	}
}

// s3BucketPattern is S3's rule for bucket names; s3PrefixPattern a key prefix
// of plain segments, which the store puts before its ws/... keys.
var (
	s3BucketPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)
	s3PrefixPattern = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]*(/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$`)
)

func (v *validator) objectStore(o ObjectStore) {
	u, err := parseURL(o.URL)
	switch {
	case err != nil:
		v.fail("object_store.url", "invalid URL: %v", err)
	case u.Scheme == "file":
		if strings.TrimPrefix(o.URL, "file://") == "" {
			v.fail("object_store.url", "file:// needs a directory, such as file://data/objects")
		}
	case u.Scheme == "s3":
		switch {
		case u.Host == "":
			v.fail("object_store.url", "s3:// needs a bucket name, such as s3://assets")
		case !s3BucketPattern.MatchString(u.Host) || strings.Contains(u.Host, ".."):
			v.fail("object_store.url", "bucket %q is not an S3 bucket name (3 to 63 lowercase letters, digits, '.' and '-')", u.Host)
		}
		if prefix := strings.Trim(u.Path, "/"); prefix != "" && !s3PrefixPattern.MatchString(prefix) {
			v.fail("object_store.url", "prefix %q must be segments of letters, digits, '.', '_' and '-' separated by '/'", prefix)
		}
		if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			v.fail("object_store.url", "s3:// takes only a bucket and a prefix; keys go in access_key_id and secret_access_key")
		}
		if (o.AccessKeyID == "") != (o.SecretAccessKey == "") {
			v.fail("object_store.access_key_id", "access_key_id and secret_access_key must be set together")
		}
		if o.Endpoint == "" {
			v.fail("object_store.endpoint", "is required for an s3:// object store")
		} else {
			v.hostPort("object_store.endpoint", o.Endpoint)
		}
		if o.Region == "" {
			v.fail("object_store.region", "is required for an s3:// object store")
		}
	default:
		v.fail("object_store.url", "scheme must be file or s3, got %q", u.Scheme)
	}
}

func (v *validator) outbox(o Outbox) {
	v.positive("outbox.purge_interval_seconds", o.PurgeIntervalSeconds)
	v.positive("outbox.purge_batch", o.PurgeBatch)
	v.positive("outbox.purge_budget_seconds", o.PurgeBudgetSeconds)
	v.positive("outbox.webhook_in_flight_per_subscription", o.WebhookInFlightPerSubscription)
	v.positive("outbox.webhook_connect_timeout_seconds", o.WebhookConnectTimeoutSeconds)
	v.positive("outbox.webhook_response_timeout_seconds", o.WebhookResponseTimeoutSeconds)
	v.positive("outbox.webhook_slow_attempt_ms", o.WebhookSlowAttemptMS)
	v.nonNegative("outbox.webhook_slow_attempts", o.WebhookSlowAttempts)
	v.positive("outbox.webhook_endpoint_failures", o.WebhookEndpointFailures)
	v.fields("outbox.defaults", reflect.ValueOf(o.Defaults))
	for _, kind := range slices.Sorted(maps.Keys(o.ByKind)) {
		if !slices.Contains(OutboxKinds, kind) {
			v.fail("outbox.by_kind", "unknown outbox kind %q (known: %s)", kind, strings.Join(OutboxKinds, ", "))
			continue
		}
		v.fields("outbox.by_kind."+kind, reflect.ValueOf(o.ByKind[kind]))
	}
}

// fields checks that every integer field of an OutboxPolicy or OutboxOverride
// is positive; nil override fields are unset and skipped.
func (v *validator) fields(prefix string, s reflect.Value) {
	for i := range s.NumField() {
		f := s.Field(i)
		if f.Kind() == reflect.Pointer {
			if f.IsNil() {
				continue
			}
			f = f.Elem()
		}
		v.positive(prefix+"."+s.Type().Field(i).Tag.Get("koanf"), int(f.Int()))
	}
}

func (v *validator) mail(m Mail) {
	v.oneOf("mail.transport", m.Transport, "log", "file", "smtp")
	if _, err := mail.ParseAddress(m.From); err != nil {
		v.fail("mail.from", "must be a mail address such as \"svc <noreply@example.com>\", got %q", m.From)
	}
	switch m.Transport {
	case "file":
		if m.FileDir == "" {
			v.fail("mail.file_dir", "is required when mail.transport is \"file\"")
		}
	case "smtp":
		if m.SMTPHost == "" {
			v.fail("mail.smtp_host", "is required when mail.transport is \"smtp\"")
		}
	}
	v.port("mail.smtp_port", m.SMTPPort)
	v.oneOf("mail.smtp_tls", m.SMTPTLS, "starttls", "tls", "none")
}

// maxTracingQueue bounds tracing.queue_size: a full queue of spans of a
// few kilobytes each stays within a few hundred megabytes.
const maxTracingQueue = 1 << 17

// headerName is an HTTP header name (RFC 9110 token).
var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

func (v *validator) tracing(t Tracing) {
	v.oneOf("tracing.protocol", t.Protocol, "http/protobuf", "grpc")
	if t.OTLPEndpoint != "" {
		u, err := parseURL(t.OTLPEndpoint)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "":
			v.fail("tracing.otlp_endpoint", "must be an http or https URL such as \"http://otel-collector:4318\"")
		case u.User != nil:
			v.fail("tracing.otlp_endpoint", "must not carry credentials; send them in tracing.headers")
		case u.RawQuery != "" || u.Fragment != "":
			v.fail("tracing.otlp_endpoint", "must not have a query or a fragment")
		case t.Protocol == "grpc" && strings.Trim(u.Path, "/") != "":
			v.fail("tracing.otlp_endpoint", "a grpc endpoint has no path, only scheme://host:port")
		}
	}
	for i, h := range t.Headers {
		name, value, ok := strings.Cut(h, "=")
		name = strings.TrimSpace(name)
		// The value may be a secret: never repeated.
		if !ok || !headerName.MatchString(name) || strings.ContainsAny(value, "\r\n\x00") {
			v.fail(fmt.Sprintf("tracing.headers[%d]", i), "must be name=value with an HTTP header name and a value on one line")
		}
	}
	if strings.TrimSpace(t.ServiceName) == "" {
		v.fail("tracing.service_name", "must not be empty")
	}
	// Written so that NaN fails too.
	if !(t.SampleRatio >= 0 && t.SampleRatio <= 1) {
		v.fail("tracing.sample_ratio", "must be a number from 0 to 1, got %v", t.SampleRatio)
	}
	v.duration("tracing.export_timeout", t.ExportTimeout)
	if t.QueueSize < 1 || t.QueueSize > maxTracingQueue {
		v.fail("tracing.queue_size", "must be 1 to %d, got %d", maxTracingQueue, t.QueueSize)
	}
}
