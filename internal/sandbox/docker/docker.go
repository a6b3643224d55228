// Package docker implements the `docker` environment type: an environment
// is a container on a Docker Engine (or a compatible engine) that svc reaches
// over the Engine HTTP API, through the endpoint policy's engine client (an
// allowed Unix socket, or tcp:// with TLS). There is no docker CLI and no SDK:
// the few endpoints used are called with net/http.
//
// A container is created from the template's image (pulled when absent) with
// the template's CPU and memory limits, working directory and user, no network
// unless the provider names one, and an init process that keeps it running
// (/bin/sh waiting on an open, never-written standard input, under the
// engine's init). Commands run as execs; files move through the archive API.
// See docs/decisions/0030-docker-environment.md.
package docker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/sandbox"
)

// Labels set on every container svc makes.
const (
	LabelEnvironment = "svc.environment"
	LabelWorkspace   = "svc.workspace"
	// LabelExpiresAt holds the instance's deadline (RFC 3339), so a Create
	// repeated after a crash finds the deadline it set the first time.
	LabelExpiresAt = "svc.expires_at"
)

// Defaults of the type's schema and of the driver.
const (
	DefaultHost           = "unix:///var/run/docker.sock"
	DefaultWorkdir        = "/workspace"
	DefaultTimeoutSeconds = 3600
	MaxTimeoutSeconds     = 604800
	// DefaultCallTimeout bounds one engine call that is not a stream.
	DefaultCallTimeout = 30 * time.Second
	// DefaultPullTimeout bounds an image pull.
	DefaultPullTimeout = 15 * time.Minute
	// StopGraceSeconds is what Stop gives the container before the engine kills it.
	StopGraceSeconds = 10
	// MaxAPIVersion is the newest Engine API version this package speaks; a
	// newer engine is called with it. MinAPIVersion is the oldest accepted.
	MaxAPIVersion = "1.47"
	MinAPIVersion = "1.40"
)

// ErrInvalidConfig: the provider's or template's configuration, the
// credential or the environment id cannot be used.
var ErrInvalidConfig = errors.New("envdocker: invalid configuration")

// Options are the operator-side settings outside the type's schema.
type Options struct {
	// CallTimeout bounds each engine call other than pulls and command
	// streams (0: DefaultCallTimeout).
	CallTimeout time.Duration
	// PullTimeout bounds an image pull (0: DefaultPullTimeout).
	PullTimeout time.Duration
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
	// Guard is the operator's rule on networks and users, checked again at
	// every Create (the zero Guard allows no network and no root).
	Guard Guard
}

// Driver is the docker type's sandbox.Driver. It keeps no state between
// calls: every call builds its engine client from the Spec, so it is safe for
// concurrent use and survives restarts.
type Driver struct {
	policy      *endpoint.Policy
	callTimeout time.Duration
	pullTimeout time.Duration
	now         func() time.Time
	guard       Guard
}

var _ sandbox.Driver = (*Driver)(nil)

// New returns the docker driver. Every engine address goes through policy
// (unix sockets must be in endpoint_policy.allowed_sockets).
func New(policy *endpoint.Policy, opts Options) *Driver {
	d := &Driver{policy: policy, callTimeout: opts.CallTimeout, pullTimeout: opts.PullTimeout, now: opts.Now, guard: opts.Guard}
	if d.callTimeout <= 0 {
		d.callTimeout = DefaultCallTimeout
	}
	if d.pullTimeout <= 0 {
		d.pullTimeout = DefaultPullTimeout
	}
	if d.now == nil {
		d.now = time.Now
	}
	return d
}

// providerConfig is the provider's configuration (env_docker.go).
type providerConfig struct {
	Host       string `json:"host"`
	APIVersion string `json:"api_version"`
	Network    string `json:"network"`
}

// credential is the provider's decrypted credential.
type credential struct {
	TLSCA   string `json:"tls_ca"`
	TLSCert string `json:"tls_cert"`
	TLSKey  string `json:"tls_key"`
}

// templateConfig is the environment template's configuration.
type templateConfig struct {
	Image          string  `json:"image"`
	CPU            float64 `json:"cpu"`
	MemoryMB       int64   `json:"memory_mb"`
	Workdir        string  `json:"workdir"`
	User           string  `json:"user"`
	TimeoutSeconds int     `json:"timeout_seconds"`
}

// decodeStrict decodes raw into v, refusing unknown fields and trailing data.
func decodeStrict(what string, raw []byte, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrInvalidConfig, what, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: %s: trailing data", ErrInvalidConfig, what)
	}
	return nil
}

func parseProvider(raw []byte) (providerConfig, error) {
	var c providerConfig
	if err := decodeStrict("provider configuration", raw, &c); err != nil {
		return c, err
	}
	if c.Host == "" {
		c.Host = DefaultHost
	}
	if c.APIVersion != "" && !validVersion(c.APIVersion) {
		return c, fmt.Errorf("%w: api_version %q", ErrInvalidConfig, c.APIVersion)
	}
	return c, nil
}

func parseCredential(raw []byte) (credential, error) {
	var c credential
	if len(raw) == 0 || string(raw) == "null" {
		return c, nil
	}
	// Refusing unknown members here could only reject a stored credential
	// the schema accepted; decode leniently.
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, fmt.Errorf("%w: credential is not a JSON object", ErrInvalidConfig)
	}
	return c, nil
}

func parseTemplate(raw []byte) (templateConfig, error) {
	var c templateConfig
	if err := decodeStrict("template configuration", raw, &c); err != nil {
		return c, err
	}
	switch {
	case !validImage(c.Image):
		return c, fmt.Errorf("%w: image must be an image reference such as python:3.13-slim", ErrInvalidConfig)
	case c.CPU != 0 && (c.CPU < 0.1 || c.CPU > 256):
		return c, fmt.Errorf("%w: cpu must be between 0.1 and 256", ErrInvalidConfig)
	case c.MemoryMB != 0 && (c.MemoryMB < 64 || c.MemoryMB > 1048576):
		return c, fmt.Errorf("%w: memory_mb must be between 64 and 1048576", ErrInvalidConfig)
	case c.TimeoutSeconds < 0 || c.TimeoutSeconds > MaxTimeoutSeconds:
		return c, fmt.Errorf("%w: timeout_seconds must be between 1 and %d", ErrInvalidConfig, MaxTimeoutSeconds)
	case strings.ContainsRune(c.User, 0) || strings.ContainsRune(c.Workdir, 0):
		return c, fmt.Errorf("%w: NUL in user or workdir", ErrInvalidConfig)
	}
	if c.Workdir == "" {
		c.Workdir = DefaultWorkdir
	}
	if !path.IsAbs(c.Workdir) || path.Clean(c.Workdir) != c.Workdir || c.Workdir == "/" {
		return c, fmt.Errorf("%w: workdir must be a clean absolute path other than /", ErrInvalidConfig)
	}
	if c.TimeoutSeconds == 0 {
		c.TimeoutSeconds = DefaultTimeoutSeconds
	}
	return c, nil
}

// containerName is the engine name of an environment's container. The id is
// checked first, so the name is always a valid container name.
func containerName(envID string) (string, error) {
	if !id.HasPrefix(envID, id.Environment) {
		return "", fmt.Errorf("%w: environment id %q", ErrInvalidConfig, envID)
	}
	for _, c := range envID[len(id.Environment)+1:] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'z') {
			return "", fmt.Errorf("%w: environment id %q", ErrInvalidConfig, envID)
		}
	}
	return "svc-" + envID, nil
}

// handle is the stored form of a sandbox.Handle.
type handle struct {
	ContainerID string    `json:"container_id"`
	APIVersion  string    `json:"api_version"`
	ExpiresAt   time.Time `json:"expires_at"`
}

func (h handle) encode() (sandbox.Handle, error) {
	b, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("envdocker: encode handle: %w", err)
	}
	return sandbox.Handle(b), nil
}

func decodeHandle(raw sandbox.Handle) (handle, error) {
	var h handle
	if err := json.Unmarshal(raw, &h); err != nil {
		return h, fmt.Errorf("%w: handle is not a docker handle", ErrInvalidConfig)
	}
	if !validContainerID(h.ContainerID) || (h.APIVersion != "" && !validVersion(h.APIVersion)) {
		return h, fmt.Errorf("%w: handle is not a docker handle", ErrInvalidConfig)
	}
	return h, nil
}

// validContainerID accepts the engine's 64-hex ids (and their 12+ prefixes).
func validContainerID(s string) bool {
	if len(s) < 12 || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// validImage accepts the characters of an image reference
// ([registry[:port]/]name[:tag][@digest]); they are all safe in a URL path.
func validImage(s string) bool {
	if s == "" || len(s) > 512 || strings.HasPrefix(s, "/") || strings.Contains(s, "..") {
		return false
	}
	for _, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._-/:@", c)
		if !ok {
			return false
		}
	}
	return true
}
