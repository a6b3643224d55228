package local

import (
	"fmt"
	"strings"

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

// shell sets the limits and then becomes the command's program, so that no
// instruction of the program runs before its limits hold: prlimit(2) on a
// started process races with it. $0 is the program's path; the remaining
// arguments are its own.
const shell = "/bin/sh"

// wrap returns the path and arguments that run prog with argv under the
// limits: a POSIX shell sets each one (soft and hard, ulimit's units: KiB for
// -v, 512-byte blocks for -f), then execs prog in its own place, with the
// same process id and keepPWD telling whether the command's environment
// sets PWD itself. A limit above the worker's own hard limit is lowered to it.
func (l Limits) wrap(prog string, argv []string, keepPWD bool) (string, []string, error) {
	var script strings.Builder
	for _, r := range []struct {
		flag     string
		resource int
		value    uint64
		unit     uint64
	}{
		{"-v", unix.RLIMIT_AS, l.AddressSpaceBytes, 1024},
		{"-t", unix.RLIMIT_CPU, l.CPUSeconds, 1},
		{"-n", unix.RLIMIT_NOFILE, l.OpenFiles, 1},
		{"-f", unix.RLIMIT_FSIZE, l.FileSizeBytes, 512},
	} {
		var cur unix.Rlimit
		if err := unix.Getrlimit(r.resource, &cur); err != nil {
			return "", nil, fmt.Errorf("envlocal: read the worker's %s limit: %w", r.flag, err)
		}
		v := min(r.value, cur.Max)
		if v == unix.RLIM_INFINITY {
			continue
		}
		fmt.Fprintf(&script, "ulimit %s %d || exit 126; ", r.flag, v/r.unit)
	}
	// The shell exports PWD; the command's environment is exactly the one
	// it was given (commandEnv), so the variable goes unless it was given.
	if !keepPWD {
		script.WriteString("unset PWD; ")
	}
	script.WriteString(`exec "$0" "$@"`)
	args := append([]string{"sh", "-c", script.String(), prog}, argv[1:]...)
	return shell, args, nil
}
