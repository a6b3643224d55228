package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/svcdev/svc/internal/sandbox"
	"golang.org/x/sys/unix"
)

// Command bounds.
const (
	// DefaultCommandTimeout applies when Command.Timeout is 0.
	DefaultCommandTimeout = 60 * time.Second
	// MaxCommandTimeout caps Command.Timeout.
	MaxCommandTimeout = time.Hour
	// DefaultOutputLimit is the per-stream capture limit when Command.OutputLimit is 0.
	DefaultOutputLimit = 1 << 20
	// MaxOutputLimit caps Command.OutputLimit.
	MaxOutputLimit = 16 << 20
	// pipeGrace is how long Run waits for output pipes held open by a process
	// that left the command's process group, once the group is gone.
	pipeGrace = 5 * time.Second
)

// DefaultPath is the command's PATH unless Command.Env sets one.
const DefaultPath = "/usr/local/bin:/usr/bin:/bin"

// ErrInvalidCommand is returned for an empty argv or a malformed variable.
var ErrInvalidCommand = errors.New("envlocal: invalid command")

// Command is one command to run in the working folder.
type Command struct {
	// Argv is the program and its arguments; no shell is involved unless the
	// caller passes one (["sh", "-c", "..."]). A program name without a slash
	// is looked up in the command's PATH; a relative path is relative to Dir.
	Argv []string
	// Dir is a directory of the working folder to run in ("" for the folder).
	Dir string
	// Env holds the command's only environment variables besides the defaults
	// (PATH, HOME set to the working folder, LANG); nothing is inherited from
	// the service, whose environment holds secrets.
	Env map[string]string
	// Stdin is the command's standard input; nil means none (/dev/null).
	Stdin []byte
	// Timeout is the wall-clock limit (0 means DefaultCommandTimeout; capped at
	// MaxCommandTimeout and at the environment's remaining lifetime).
	Timeout time.Duration
	// OutputLimit is the number of bytes kept of each of stdout and stderr
	// (0 means DefaultOutputLimit; capped at MaxOutputLimit). The rest is read
	// and discarded, so the command never blocks on a full pipe.
	OutputLimit int
}

// Result is a finished command.
type Result struct {
	// ExitCode is the exit status, or -1 when a signal ended the command.
	ExitCode int
	// Signal names the signal that ended it ("killed", "CPU time limit
	// exceeded", ...), empty when it exited.
	Signal string
	Stdout []byte
	Stderr []byte
	// StdoutTruncated and StderrTruncated are set when a stream passed the limit.
	StdoutTruncated bool
	StderrTruncated bool
	// TimedOut is set when the time-out killed the command's process group.
	TimedOut bool
	Duration time.Duration
}

// Run runs a command in the environment and waits for it. The command leads
// a new process group; when the time-out passes or ctx ends, the whole group
// is killed (SIGKILL), and when the command exits, whatever it left running
// in its group is killed too. Resource limits are set before the command's
// program starts, and set again on the process once it runs (see Limits). When ctx ends, Run returns the partial result
// with ctx's error; a time-out is not an error (Result.TimedOut).
func (e *Env) Run(ctx context.Context, c Command) (Result, error) {
	if e.Expired() {
		return Result{}, ErrExpired
	}
	cmd, err := e.command(c)
	if err != nil {
		return Result{}, err
	}
	limit := c.OutputLimit
	if limit <= 0 {
		limit = DefaultOutputLimit
	}
	limit = min(limit, MaxOutputLimit)
	stdout, stderr := sandbox.NewCappedWriter(limit), sandbox.NewCappedWriter(limit)
	cmd.Stdout, cmd.Stderr = stdout, stderr

	runCtx, cancel := context.WithTimeout(ctx, e.timeout(c.Timeout))
	defer cancel()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("envlocal: start %q: %w", c.Argv[0], err)
	}
	pid := cmd.Process.Pid
	registerGroup(e.dir, pid)
	if err := e.p.limits.apply(pid); err != nil {
		unregisterGroup(e.dir, pid)
		killGroup(pid)
		_ = cmd.Wait()
		return Result{}, err
	}

	// The killer ends the group on time-out or cancellation. It is stopped
	// before the command is reaped, so it can never signal a recycled id.
	var killed atomic.Bool
	exited, killerDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(killerDone)
		select {
		case <-runCtx.Done():
			killed.Store(true)
			killGroup(pid)
		case <-exited:
		}
	}()
	waitErr := waitExitNoReap(pid)
	dur := time.Since(start)
	unregisterGroup(e.dir, pid)
	close(exited)
	<-killerDone
	killGroup(pid) // leftovers in the group; the leader is a zombie, not yet reaped
	err = cmd.Wait()
	if waitErr != nil {
		return Result{}, waitErr
	}
	if cmd.ProcessState == nil {
		return Result{}, fmt.Errorf("envlocal: wait for %q: %w", c.Argv[0], err)
	}

	res := Result{
		ExitCode: cmd.ProcessState.ExitCode(),
		Stdout:   stdout.Bytes(), StdoutTruncated: stdout.Truncated(),
		Stderr: stderr.Bytes(), StderrTruncated: stderr.Truncated(),
		Duration: dur,
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.Signal = ws.Signal().String()
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) && !errors.Is(err, exec.ErrWaitDelay) {
		return res, fmt.Errorf("envlocal: wait for %q: %w", c.Argv[0], err)
	}
	if killed.Load() {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return res, ctxErr
		}
		res.TimedOut = true
	}
	return res, nil
}

// timeout is the command's effective wall-clock limit.
func (e *Env) timeout(d time.Duration) time.Duration {
	if d <= 0 {
		d = DefaultCommandTimeout
	}
	d = min(d, MaxCommandTimeout)
	return max(min(d, e.meta.ExpiresAt.Sub(e.p.now())), time.Millisecond)
}

// command builds the exec.Cmd: explicit environment, working directory inside
// the working folder, its own process group, SIGKILL if the worker dies.
func (e *Env) command(c Command) (*exec.Cmd, error) {
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		return nil, fmt.Errorf("%w: empty argv", ErrInvalidCommand)
	}
	env, err := commandEnv(e.dir, c.Env)
	if err != nil {
		return nil, err
	}
	dir := e.dir
	if c.Dir != "" && c.Dir != "." {
		name, err := cleanName(c.Dir)
		if err != nil {
			return nil, err
		}
		st, err := e.root.Stat(name)
		if err != nil {
			return nil, rootErr("run in", name, err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("%w: %q is not a directory", ErrInvalidCommand, name)
		}
		dir = filepath.Join(e.dir, filepath.FromSlash(name))
	}
	prog, err := lookPath(c.Argv[0], dir, env)
	if err != nil {
		return nil, err
	}
	path, args, err := e.p.limits.wrap(prog, c.Argv, slices.ContainsFunc(env, func(v string) bool { return strings.HasPrefix(v, "PWD=") }))
	if err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{
		Path: path, Args: args, Dir: dir, Env: env,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
		WaitDelay:   pipeGrace,
	}
	if c.Stdin != nil {
		cmd.Stdin = bytes.NewReader(c.Stdin)
	}
	return cmd, nil
}

// commandEnv is the command's whole environment: the defaults, overridden
// and extended by the caller's variables, and nothing else.
func commandEnv(home string, vars map[string]string) ([]string, error) {
	m := map[string]string{"PATH": DefaultPath, "HOME": home, "LANG": "C.UTF-8"}
	for k, v := range vars {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf("%w: environment variable %q", ErrInvalidCommand, k)
		}
		m[k] = v
	}
	env := make([]string, 0, len(m))
	for k, v := range m {
		env = append(env, k+"="+v)
	}
	return env, nil
}

// lookPath resolves the program the way a shell would, but with the
// command's PATH rather than the service's.
func lookPath(prog, dir string, env []string) (string, error) {
	if strings.Contains(prog, "/") {
		if !filepath.IsAbs(prog) {
			prog = filepath.Join(dir, prog)
		}
		if isExecutable(prog) {
			return prog, nil
		}
		return "", fmt.Errorf("%w: %q is not an executable file", ErrInvalidCommand, prog)
	}
	pathVar := DefaultPath
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathVar = v
		}
	}
	for _, d := range filepath.SplitList(pathVar) {
		if !filepath.IsAbs(d) {
			continue // a relative PATH entry would depend on the worker's directory
		}
		if p := filepath.Join(d, prog); isExecutable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %q not found in PATH", ErrInvalidCommand, prog)
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

// waitExitNoReap blocks until the process exits, leaving it a zombie
// (WNOWAIT), so its id stays reserved until cmd.Wait reaps it.
func waitExitNoReap(pid int) error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("envlocal: wait for process %d: %w", pid, err)
		}
		return nil
	}
}

// killGroup sends SIGKILL to the process group led by pid. An empty group
// (ESRCH) is not an error.
func killGroup(pid int) {
	_ = unix.Kill(-pid, unix.SIGKILL)
}
