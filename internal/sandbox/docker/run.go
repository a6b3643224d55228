package docker

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/svcdev/svc/internal/sandbox"
)

// MarkerVar is set on every command to a random token, so that a command that
// outlives its time-out can be found and killed with its descendants (the
// engine cannot signal an exec, and the pid it reports is the host's, not the
// container's). Callers cannot set it.
const MarkerVar = "SVC_EXEC_ID"

// killScript, run by /bin/sh in the container with the token as $1, kills
// every process whose environment holds the token's marker.
const killScript = `for d in /proc/[0-9]*; do case "$(cat "$d/environ" 2>/dev/null)" in *"` + MarkerVar + `=$1"*) kill -9 "${d#/proc/}" 2>/dev/null;; esac; done; exit 0`

// Bounds of the clean-up done after a command.
const (
	killTimeout    = 10 * time.Second
	exitCodeWait   = 2 * time.Second
	exitCodePoll   = 20 * time.Millisecond
	maxSystemError = 4 << 10
)

// execConfig is the body of POST /containers/{id}/exec.
type execConfig struct {
	AttachStdin  bool     `json:"AttachStdin"`
	AttachStdout bool     `json:"AttachStdout"`
	AttachStderr bool     `json:"AttachStderr"`
	Tty          bool     `json:"Tty"`
	Env          []string `json:"Env"`
	WorkingDir   string   `json:"WorkingDir"`
	Cmd          []string `json:"Cmd"`
}

// execStartBody is the body of POST /exec/{id}/start: attached, no TTY, so
// the output comes multiplexed.
const execStartBody = `{"Detach":false,"Tty":false}`

// execInfo is the part of GET /exec/{id}/json that is used.
type execInfo struct {
	Running  bool `json:"Running"`
	ExitCode *int `json:"ExitCode"`
}

// Run runs a command as an exec in the container and waits for it. Its output
// is read from the engine's multiplexed stream, each stream kept up to the
// output limit and the rest discarded. When the time-out passes (or ctx
// ends), the command and its descendants are killed (see MarkerVar) and the
// result has TimedOut set and ExitCode -1 (with ctx's error when ctx ended).
// Standard input, when given (even empty), is written on the exec's hijacked
// connection and then closed, so the command reads it to its end (see
// streamInput); without it the command's standard input is empty.
func (in *Instance) Run(ctx context.Context, c sandbox.Command) (sandbox.Result, error) {
	if err := in.expired(); err != nil {
		return sandbox.Result{}, err
	}
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		return sandbox.Result{}, fmt.Errorf("%w: empty argv", ErrInvalidCommand)
	}
	if slices.ContainsFunc(c.Argv, func(a string) bool { return strings.ContainsRune(a, 0) }) {
		return sandbox.Result{}, fmt.Errorf("%w: NUL in argv", ErrInvalidCommand)
	}
	dir, err := in.abs(c.Dir)
	if err != nil {
		return sandbox.Result{}, err
	}
	token := newToken()
	env, err := commandEnv(c.Env, token)
	if err != nil {
		return sandbox.Result{}, err
	}
	limit := c.OutputLimit
	if limit <= 0 {
		limit = sandbox.DefaultOutputLimit
	}
	limit = min(limit, sandbox.MaxOutputLimit)

	execID, err := in.createExec(ctx, execConfig{
		AttachStdin: c.Stdin != nil, AttachStdout: true, AttachStderr: true,
		Env: env, WorkingDir: dir, Cmd: c.Argv,
	})
	if err != nil {
		return sandbox.Result{}, err
	}
	runCtx, cancel := context.WithTimeout(ctx, in.timeout(c.Timeout))
	defer cancel()
	stdout, stderr := sandbox.NewCappedWriter(limit), sandbox.NewCappedWriter(limit)
	start := time.Now()
	var streamErr error
	if c.Stdin != nil {
		streamErr = in.streamInput(runCtx, execID, c.Stdin, stdout, stderr)
	} else {
		streamErr = in.stream(runCtx, execID, stdout, stderr)
	}
	res := sandbox.Result{
		Stdout: stdout.Bytes(), StdoutTruncated: stdout.Truncated(),
		Stderr: stderr.Bytes(), StderrTruncated: stderr.Truncated(),
		Duration: time.Since(start),
	}
	if runCtx.Err() != nil {
		// Time-out or cancellation: the command may still run. Kill it on a
		// context of its own, so a cancelled caller still cleans up.
		killCtx, killCancel := context.WithTimeout(context.WithoutCancel(ctx), killTimeout)
		defer killCancel()
		killErr := in.kill(killCtx, token)
		res.ExitCode, res.TimedOut = -1, true
		if ctx.Err() != nil {
			res.TimedOut = false
			return res, ctx.Err()
		}
		if killErr != nil {
			return res, fmt.Errorf("envdocker: kill the timed-out command: %w", killErr)
		}
		return res, nil
	}
	if streamErr != nil {
		return res, streamErr
	}
	code, err := in.exitCode(ctx, execID)
	if err != nil {
		return res, err
	}
	res.ExitCode = code
	return res, nil
}

// timeout is the command's effective time-out: the default when unset,
// capped at MaxCommandTimeout and the instance's remaining lifetime.
func (in *Instance) timeout(d time.Duration) time.Duration {
	if d <= 0 {
		d = sandbox.DefaultCommandTimeout
	}
	d = min(d, sandbox.MaxCommandTimeout)
	return max(min(d, in.expires.Sub(in.now())), time.Millisecond)
}

// commandEnv is the exec's variables: the caller's and the marker. The
// container's own variables (the image's ENV) apply underneath.
func commandEnv(vars map[string]string, token string) ([]string, error) {
	env := make([]string, 0, len(vars)+1)
	for k, v := range vars {
		if k == "" || k == MarkerVar || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf("%w: environment variable %q", ErrInvalidCommand, k)
		}
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	return append(env, MarkerVar+"="+token), nil
}

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// createExec creates an exec in the container; a missing container is ErrGone.
func (in *Instance) createExec(ctx context.Context, cfg execConfig) (string, error) {
	var created struct {
		ID string `json:"Id"`
	}
	status, err := in.e.call(ctx, "create exec", http.MethodPost, "/containers/"+in.id+"/exec", nil, cfg, &created)
	var de *Error
	if errors.As(err, &de) && status == http.StatusNotFound {
		return "", de.withCause(sandbox.ErrGone)
	}
	if err != nil {
		return "", err
	}
	if !validContainerID(created.ID) {
		return "", &Error{Op: "create exec", Message: "the engine returned no valid exec id"}
	}
	return created.ID, nil
}

// stream starts the exec attached and demultiplexes its output into stdout
// and stderr until the command ends (the engine closes the stream).
func (in *Instance) stream(ctx context.Context, execID string, stdout, stderr io.Writer) error {
	resp, err := in.e.send(ctx, "start exec", http.MethodPost, "/exec/"+execID+"/start", nil,
		strings.NewReader(execStartBody), "application/json")
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		de := engineError("start exec", resp)
		if resp.StatusCode == http.StatusNotFound {
			return de.withCause(sandbox.ErrGone)
		}
		return de
	}
	return outputError(ctx, demux(resp.Body, stdout, stderr))
}

// outputError is what a failed read of the output stream (err) returns: ctx's
// end, the engine's own error, or a broken stream; nil stays nil.
func outputError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return transportError("read exec output", ctx.Err())
	}
	var de *Error
	if errors.As(err, &de) {
		return de
	}
	return &Error{Op: "read exec output", Message: "the output stream broke off"}
}

// Stream types of the engine's multiplexed framing.
const (
	streamStdin    = 0
	streamStdout   = 1
	streamStderr   = 2
	streamSystemEr = 3
)

// demux reads the engine's multiplexed stream: frames of an 8-byte header
// (stream type, three zero bytes, big-endian uint32 payload length) and the
// payload. A stdin frame is written to stdout, as the engine's own client does.
func demux(r io.Reader, stdout, stderr io.Writer) error {
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		n := int64(binary.BigEndian.Uint32(hdr[4:]))
		var w io.Writer
		switch hdr[0] {
		case streamStdin, streamStdout:
			w = stdout
		case streamStderr:
			w = stderr
		case streamSystemEr:
			var msg bytes.Buffer
			_, _ = io.CopyN(&msg, r, min(n, maxSystemError))
			return &Error{Op: "exec", Message: "the engine reported: " + clean(msg.String())}
		default:
			return &Error{Op: "read exec output", Message: fmt.Sprintf("unknown stream type %d in the output", hdr[0])}
		}
		if _, err := io.CopyN(w, r, n); err != nil {
			if errors.Is(err, io.EOF) {
				return io.ErrUnexpectedEOF
			}
			return err
		}
	}
}

// exitCode reads the exec's exit code, waiting briefly for the engine to
// record it after the stream ended.
func (in *Instance) exitCode(ctx context.Context, execID string) (int, error) {
	deadline := time.Now().Add(exitCodeWait)
	for {
		var info execInfo
		if _, err := in.e.call(ctx, "inspect exec", http.MethodGet, "/exec/"+execID+"/json", nil, nil, &info); err != nil {
			return 0, err
		}
		if !info.Running && info.ExitCode != nil {
			return *info.ExitCode, nil
		}
		if time.Now().After(deadline) {
			return 0, &Error{Op: "inspect exec", Message: "the engine has not recorded the command's exit code"}
		}
		select {
		case <-ctx.Done():
			return 0, transportError("inspect exec", ctx.Err())
		case <-time.After(exitCodePoll):
		}
	}
}

// kill kills the processes carrying token's marker, and waits for the kill
// script to finish.
func (in *Instance) kill(ctx context.Context, token string) error {
	execID, err := in.createExec(ctx, execConfig{
		AttachStdout: true, AttachStderr: true, WorkingDir: "/",
		Cmd: []string{"/bin/sh", "-c", killScript, "svc-kill", token},
	})
	if err != nil {
		return err
	}
	return in.stream(ctx, execID, io.Discard, io.Discard)
}
