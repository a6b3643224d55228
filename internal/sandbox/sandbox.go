// Package sandbox is the contract between runs and environment types: a
// Driver makes, reopens, stops and destroys the instances of one environment
// type, and an Instance runs commands and reads and writes files in one of
// them. The drivers are the packages under this one: sandbox/local,
// sandbox/docker and sandbox/hosted (e2b, daytona, runloop, fly_machines,
// kubernetes, modal). The environment tools and the environment sweeps use
// only these interfaces, so every type behaves alike.
//
// Paths are relative to the instance's working directory ("" or "." is the
// directory itself); a path that leaves it is refused with ErrPath.
package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Errors a Driver or Instance returns; wrap them with context.
var (
	// ErrPath: the path is malformed or leaves the working directory.
	ErrPath = errors.New("sandbox: path outside the working directory")
	// ErrNotFound: the file, directory or instance does not exist.
	ErrNotFound = errors.New("sandbox: not found")
	// ErrGone: the vendor ended the instance (expired, deleted, stopped and
	// not resumable); the run must make a new one.
	ErrGone = errors.New("sandbox: instance is gone")
	// ErrUnsupported: the type cannot do this (stop on a type without stop).
	ErrUnsupported = errors.New("sandbox: not supported by this environment type")
)

// Bounds every type applies to commands and files.
const (
	DefaultCommandTimeout = 60 * time.Second
	MaxCommandTimeout     = time.Hour
	DefaultOutputLimit    = 1 << 20 // bytes kept of each of stdout and stderr
	MaxOutputLimit        = 16 << 20
	DefaultReadLimit      = 1 << 20
	MaxReadLimit          = 16 << 20
	MaxWriteBytes         = 16 << 20
	MaxListEntries        = 1000
)

// Spec is what a Driver needs to make an instance: the environment's id (svc's
// env_…, usable in the vendor's names and labels), its provider's config and
// decrypted credential, and the template's config (validated already against
// the type's environment schema).
type Spec struct {
	EnvironmentID string
	WorkspaceID   string
	Provider      json.RawMessage
	Credential    json.RawMessage // nil when the provider stores none
	Template      json.RawMessage
}

// Handle is a Driver's reference to an instance, stored (sealed) on the
// environment row as vendor_handle and passed back to Open, Stop, Destroy and
// Renew, possibly by another process after a restart. It may hold a vendor's
// access token.
type Handle json.RawMessage

// Driver serves one environment type. Its methods are safe for concurrent use.
type Driver interface {
	// Create makes and starts an instance and returns its handle once it can
	// run commands.
	Create(ctx context.Context, spec Spec) (Handle, error)
	// Open attaches to a running instance (starting it first when it is
	// stopped and the type can resume). ErrGone when it no longer exists.
	Open(ctx context.Context, spec Spec, h Handle) (Instance, error)
	// Stop stops an instance, keeping it for a later Open; ErrUnsupported when
	// the type cannot stop. Stopping a stopped instance succeeds.
	Stop(ctx context.Context, spec Spec, h Handle) error
	// Destroy deletes an instance and everything in it; an instance already
	// gone counts as destroyed.
	Destroy(ctx context.Context, spec Spec, h Handle) error
	// Renew extends a hosted instance's life by the template's lifetime, for
	// types whose vendor ends instances on a timer; ErrUnsupported otherwise.
	Renew(ctx context.Context, spec Spec, h Handle) error
}

// Instance is an attached instance. Close releases local resources only.
type Instance interface {
	Run(ctx context.Context, c Command) (Result, error)
	ReadFile(ctx context.Context, path string, limit int64) (File, error)
	WriteFile(ctx context.Context, path string, data []byte) error
	List(ctx context.Context, dir string) ([]Entry, error)
	Close() error
}

// Command is one command. Argv runs without a shell unless it names one
// (["sh", "-c", "..."]).
type Command struct {
	Argv    []string
	Dir     string            // relative to the working directory
	Env     map[string]string // the only variables besides the type's defaults
	Stdin   []byte
	Timeout time.Duration // 0: DefaultCommandTimeout; capped at MaxCommandTimeout
	// OutputLimit is the bytes kept of each stream (0: DefaultOutputLimit;
	// capped at MaxOutputLimit); the rest is discarded, never buffered.
	OutputLimit int
}

// Result is a finished command. A command that ran and failed is a Result
// with a non-zero ExitCode, not an error.
type Result struct {
	ExitCode        int           `json:"exit_code"` // -1 when a signal or the time-out ended it
	Stdout          []byte        `json:"-"`
	Stderr          []byte        `json:"-"`
	StdoutTruncated bool          `json:"stdout_truncated"`
	StderrTruncated bool          `json:"stderr_truncated"`
	TimedOut        bool          `json:"timed_out"`
	Duration        time.Duration `json:"-"`
}

// File is a file read back, Data holding at most the limit asked for.
type File struct {
	Data      []byte
	Size      int64
	Truncated bool
}

// Entry is one member of a listed directory.
type Entry struct {
	Name  string    `json:"name"`
	Dir   bool      `json:"dir"`
	Size  int64     `json:"size"`
	MTime time.Time `json:"mtime"`
}
