package docker

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/svcdev/svc/internal/sandbox"
)

// Errors of an instance's operations besides the sandbox package's.
var (
	// ErrInvalidCommand: an empty argv or a malformed environment variable.
	ErrInvalidCommand = errors.New("envdocker: invalid command")
	// ErrTooLarge: WriteFile's data is over sandbox.MaxWriteBytes.
	ErrTooLarge = errors.New("envdocker: file too large")
)

// Instance is an open container. Its methods are safe for concurrent use.
type Instance struct {
	e       *engine
	id      string
	workdir string // absolute, in the container
	expires time.Time
	now     func() time.Time
	writeMu sync.Mutex // serialises WriteFile (the engine's extraction is not atomic)
}

var _ sandbox.Instance = (*Instance)(nil)

// ContainerID is the engine's id of the container.
func (in *Instance) ContainerID() string { return in.id }

// Workdir is the container's working directory, the root of every path.
func (in *Instance) Workdir() string { return in.workdir }

// ExpiresAt is the end of the instance's lifetime (timeout_seconds).
func (in *Instance) ExpiresAt() time.Time { return in.expires }

// Close releases the engine client's idle connections. The container keeps running.
func (in *Instance) Close() error {
	in.e.close()
	return nil
}

// expired is ErrGone once the lifetime has ended.
func (in *Instance) expired() error {
	if !in.now().Before(in.expires) {
		return fmt.Errorf("envdocker: the instance's lifetime has ended: %w", sandbox.ErrGone)
	}
	return nil
}

// abs turns a caller's path, relative to the working directory, into an
// absolute container path. It refuses NUL, absolute paths and paths that
// leave the working directory lexically. Symbolic links are resolved by the
// engine inside the container's file system, which is the boundary here:
// they reach nothing a command in the container could not reach itself.
func (in *Instance) abs(name string) (string, error) {
	if name == "" {
		name = "."
	}
	if strings.ContainsRune(name, 0) || strings.Contains(name, "\\") {
		return "", fmt.Errorf("%w: %q", sandbox.ErrPath, name)
	}
	if path.IsAbs(name) {
		return "", fmt.Errorf("%w: %q is absolute", sandbox.ErrPath, name)
	}
	c := path.Clean(name)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("%w: %q", sandbox.ErrPath, name)
	}
	return path.Join(in.workdir, c), nil
}
