// Package local implements the `local` environment type
// (docs/decisions/0026-local-environment.md): an
// environment is a working folder on the worker's host, and its tools run a
// command as a subprocess in that folder (with a time-out, captured output and
// resource limits) and read, write and list files confined to it.
//
// It is for development only and is not a security sandbox: commands run as the
// service's own user with the host's file system, network and processes in
// reach. See docs/decisions/0026-local-environment.md.
//
// Layout under the type's `workdir` (the base directory):
//
//	<workdir>/<environment id>/          0700, the environment
//	<workdir>/<environment id>/env.json  creation and expiry times
//	<workdir>/<environment id>/work/     0700, the working folder
//
// The folder is derived from the environment id alone, so the environment
// handle a run checkpoints is just the id and any worker on the same host can
// reopen it after a restart.
package local

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/id"
)

// Errors callers tell apart with errors.Is.
var (
	// ErrDisabled: the deployment has not set environments.local_enabled.
	ErrDisabled = errors.New("envlocal: the local environment type is disabled (environments.local_enabled)")
	// ErrInvalidID: the environment id is not an `env_` id.
	ErrInvalidID = errors.New("envlocal: invalid environment id")
	// ErrNotFound: the environment's folder does not exist (never created, or destroyed).
	ErrNotFound = errors.New("envlocal: environment not found")
	// ErrExpired: the environment's lifetime (timeout_seconds) has passed.
	ErrExpired = errors.New("envlocal: environment expired")
	// ErrInvalidConfig: the template's configuration is out of range.
	ErrInvalidConfig = errors.New("envlocal: invalid configuration")
)

// Config is the local type's environment configuration, the fields of the
// type's environment schema (internal/provider/catalog/env_local.go).
type Config struct {
	// Workdir is the directory on the worker's host under which each
	// environment gets its own working folder. Required, absolute.
	Workdir string `json:"workdir"`
	// TimeoutSeconds is the environment's lifetime (1..86400, default 3600).
	// After it, commands are refused and the maintain sweep should destroy it.
	TimeoutSeconds int `json:"timeout_seconds,omitempty"`
}

// ParseConfig decodes an environment template's configuration (the JSON
// object the type's environment schema describes). Unknown fields are refused.
func ParseConfig(raw []byte) (Config, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var c Config
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	return c, nil
}

// The schema's bounds for timeout_seconds.
const (
	DefaultTimeoutSeconds = 3600
	MaxTimeoutSeconds     = 86400
)

// Provider creates, opens and destroys local environments under one base
// directory. It is safe for concurrent use.
type Provider struct {
	base     string
	lifetime time.Duration
	limits   Limits
	now      func() time.Time
}

// Options are the operator-side settings that are not part of the type's
// schema. The zero value means DefaultLimits.
type Options struct {
	// Limits apply to every command; zero fields take DefaultLimits' values.
	Limits Limits
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// New returns the provider for one environment template's configuration. It
// fails with ErrDisabled unless envs.LocalEnabled is set: the type exists only
// when an operator enables it.
func New(envs config.Environments, cfg Config, opts Options) (*Provider, error) {
	if !envs.LocalEnabled {
		return nil, ErrDisabled
	}
	if cfg.Workdir == "" || !filepath.IsAbs(cfg.Workdir) {
		return nil, fmt.Errorf("%w: workdir must be an absolute path", ErrInvalidConfig)
	}
	secs := cfg.TimeoutSeconds
	if secs == 0 {
		secs = DefaultTimeoutSeconds
	}
	if secs < 1 || secs > MaxTimeoutSeconds {
		return nil, fmt.Errorf("%w: timeout_seconds must be between 1 and %d", ErrInvalidConfig, MaxTimeoutSeconds)
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &Provider{
		base:     filepath.Clean(cfg.Workdir),
		lifetime: time.Duration(secs) * time.Second,
		limits:   opts.Limits.withDefaults(),
		now:      now,
	}, nil
}

// meta is env.json.
type meta struct {
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// validID accepts only `env_` followed by a lowercase ULID, so an id can never
// name a path outside the base directory.
func validID(s string) bool {
	if !id.HasPrefix(s, id.Environment) {
		return false
	}
	for _, c := range s[len(id.Environment)+1:] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'z') {
			return false
		}
	}
	return true
}

func (p *Provider) envDir(envID string) (string, error) {
	if !validID(envID) {
		return "", ErrInvalidID
	}
	return filepath.Join(p.base, envID), nil
}

// Create makes the environment's folder and opens it. It is idempotent: an
// environment that already exists is opened as it is (a worker may die between
// creating an environment and checkpointing its handle).
func (p *Provider) Create(envID string) (*Env, error) {
	dir, err := p.envDir(envID)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(p.base, 0o700); err != nil {
		return nil, fmt.Errorf("envlocal: create base directory: %w", err)
	}
	switch err := os.Mkdir(dir, 0o700); {
	case errors.Is(err, os.ErrExist):
		return p.Open(envID)
	case err != nil:
		return nil, fmt.Errorf("envlocal: create environment folder: %w", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "work"), 0o700); err != nil {
		return nil, fmt.Errorf("envlocal: create working folder: %w", err)
	}
	now := p.now().UTC()
	m := meta{ID: envID, CreatedAt: now, ExpiresAt: now.Add(p.lifetime)}
	if err := writeMeta(dir, m); err != nil {
		return nil, err
	}
	return p.Open(envID)
}

// Open reopens an existing environment by its id (the handle), for example on
// another worker after a restart. The caller closes it.
func (p *Provider) Open(envID string) (*Env, error) {
	dir, err := p.envDir(envID)
	if err != nil {
		return nil, err
	}
	m, err := readMeta(dir)
	if err != nil {
		return nil, err
	}
	work := filepath.Join(dir, "work")
	root, err := os.OpenRoot(work)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("envlocal: open working folder: %w", err)
	}
	return &Env{p: p, meta: m, dir: work, root: root}, nil
}

// Destroy removes the environment's folder and everything in it. Destroying a
// missing environment succeeds. Commands running in it that this process
// started are killed first (their process groups); commands started by
// another process on the host are not.
func (p *Provider) Destroy(envID string) error {
	dir, err := p.envDir(envID)
	if err != nil {
		return err
	}
	killGroupsIn(filepath.Join(dir, "work"))
	// A command killed just now may create a file while it dies, which fails
	// the removal of its directory (ENOTEMPTY); a few retries cover that.
	for attempt := 0; ; attempt++ {
		err = os.RemoveAll(dir)
		if err == nil {
			return nil
		}
		if attempt == 4 {
			return fmt.Errorf("envlocal: destroy environment: %w", err)
		}
		time.Sleep(time.Duration(attempt+1) * 50 * time.Millisecond)
	}
}

func readMeta(dir string) (meta, error) {
	b, err := os.ReadFile(filepath.Join(dir, "env.json"))
	if errors.Is(err, os.ErrNotExist) {
		return meta{}, ErrNotFound
	}
	if err != nil {
		return meta{}, fmt.Errorf("envlocal: read environment metadata: %w", err)
	}
	var m meta
	if err := json.Unmarshal(b, &m); err != nil {
		return meta{}, fmt.Errorf("envlocal: decode environment metadata: %w", err)
	}
	return m, nil
}

// writeMeta writes env.json atomically: a half-written file would make the
// environment unopenable.
func writeMeta(dir string, m meta) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("envlocal: encode environment metadata: %w", err)
	}
	tmp := filepath.Join(dir, ".env.json.tmp-"+randomSuffix())
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("envlocal: write environment metadata: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "env.json")); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("envlocal: write environment metadata: %w", err)
	}
	return nil
}

func randomSuffix() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// Env is one open environment. Its methods are safe for concurrent use.
type Env struct {
	p    *Provider
	meta meta
	dir  string
	root *os.Root
}

// ID is the environment's id, its handle: pass it to Provider.Open to reopen.
func (e *Env) ID() string { return e.meta.ID }

// Dir is the absolute path of the working folder.
func (e *Env) Dir() string { return e.dir }

// CreatedAt is when the environment was created.
func (e *Env) CreatedAt() time.Time { return e.meta.CreatedAt }

// ExpiresAt is when its lifetime (timeout_seconds) ends.
func (e *Env) ExpiresAt() time.Time { return e.meta.ExpiresAt }

// Expired reports whether the lifetime has ended.
func (e *Env) Expired() bool { return !e.p.now().Before(e.meta.ExpiresAt) }

// Close releases the working folder's handle. It does not destroy anything.
func (e *Env) Close() error { return e.root.Close() }
