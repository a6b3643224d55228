package envlocal

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Limits are the resource limits (setrlimit) applied to every command. They
// stop runaway commands from exhausting the worker's host by accident; they
// do not contain a hostile one (see docs/decisions/0026-local-environment.md).
type Limits struct {
	// AddressSpaceBytes is RLIMIT_AS: allocations past it fail.
	AddressSpaceBytes uint64
	// CPUSeconds is RLIMIT_CPU: the process receives SIGXCPU (and is
	// terminated) after this much CPU time, whatever the wall-clock time-out.
	CPUSeconds uint64
	// OpenFiles is RLIMIT_NOFILE.
	OpenFiles uint64
	// FileSizeBytes is RLIMIT_FSIZE: writing a file past it fails (SIGXFSZ).
	FileSizeBytes uint64
}

// DefaultLimits are generous for development work (compilers, test suites).
var DefaultLimits = Limits{
	AddressSpaceBytes: 8 << 30,
	CPUSeconds:        600,
	OpenFiles:         1024,
	FileSizeBytes:     1 << 30,
}

func (l Limits) withDefaults() Limits {
	if l.AddressSpaceBytes == 0 {
		l.AddressSpaceBytes = DefaultLimits.AddressSpaceBytes
	}
	if l.CPUSeconds == 0 {
		l.CPUSeconds = DefaultLimits.CPUSeconds
	}
	if l.OpenFiles == 0 {
		l.OpenFiles = DefaultLimits.OpenFiles
	}
	if l.FileSizeBytes == 0 {
		l.FileSizeBytes = DefaultLimits.FileSizeBytes
	}
	return l
}

// apply sets the limits on a started process with prlimit(2). Soft and hard
// limits are equal, so the command cannot raise them again. A limit above the
// worker's own hard limit is lowered to it (an unprivileged process cannot
// raise a hard limit).
func (l Limits) apply(pid int) error {
	for _, r := range []struct {
		name     string
		resource int
		value    uint64
	}{
		{"address space", unix.RLIMIT_AS, l.AddressSpaceBytes},
		{"cpu", unix.RLIMIT_CPU, l.CPUSeconds},
		{"open files", unix.RLIMIT_NOFILE, l.OpenFiles},
		{"file size", unix.RLIMIT_FSIZE, l.FileSizeBytes},
	} {
		var cur unix.Rlimit
		if err := unix.Prlimit(pid, r.resource, nil, &cur); err != nil {
			return fmt.Errorf("envlocal: read %s limit: %w", r.name, err)
		}
		v := min(r.value, cur.Max)
		if err := unix.Prlimit(pid, r.resource, &unix.Rlimit{Cur: v, Max: v}, nil); err != nil {
			return fmt.Errorf("envlocal: set %s limit: %w", r.name, err)
		}
	}
	return nil
}
