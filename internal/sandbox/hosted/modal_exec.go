package hosted

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/svcdev/svc/internal/sandbox"
)

// modalInstance runs commands and moves files in one sandbox. Files go
// through commands too (cat, head, find), as for runloop and fly: Modal's
// filesystem calls open, read and write a file handle a call at a time.
type modalInstance struct {
	a modalAPI
	h modalHandle
}

// Close releases nothing: the connection is the driver's.
func (i *modalInstance) Close() error { return nil }

// modalExecResult is a finished exec: what was kept of each stream.
type modalExecResult struct {
	stdout, stderr       []byte
	stdoutCut, stderrCut bool
	code                 int
}

// exec runs script with sh -c in the sandbox's task through ContainerExec,
// feeds it stdin (an immediate end of input when it has none), keeps up to
// limit bytes of each output stream and waits for its exit code, all within
// wait.
func (i *modalInstance) exec(ctx context.Context, script string, stdin []byte, hasIn bool, limit int, wait time.Duration) (modalExecResult, error) {
	const op = "run command"
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	req := pbMsg{}.str(1, i.h.TaskID).
		strs(2, []string{"sh", "-c", script}).
		uint(6, modalOutputPipe).uint(7, modalOutputPipe).
		uint(8, uint64(math.Ceil(wait.Seconds()))). // a backstop: the script bounds the command itself
		optStr(9, i.h.Workdir)
	resp, err := i.a.call(ctx, op, "ContainerExec", req)
	if err != nil {
		return modalExecResult{}, modalGone(err)
	}
	id := resp.str(1)
	if id == "" {
		return modalExecResult{}, &Error{Vendor: TypeModal, Op: op, Msg: "the answer has no exec id"}
	}
	if err := i.putInput(ctx, id, stdin, hasIn); err != nil {
		return modalExecResult{}, err
	}
	stdout, stderr := sandbox.NewCappedWriter(limit), sandbox.NewCappedWriter(limit)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	// A stream that fails ends the other: the command's output is lost
	// either way, and the other would wait for its deadline.
	octx, stop := context.WithCancel(ctx)
	defer stop()
	for n, s := range []struct {
		fd uint64
		w  *sandbox.CappedWriter
	}{{modalStdout, stdout}, {modalStderr, stderr}} {
		wg.Go(func() {
			if errs[n] = i.output(octx, id, s.fd, s.w); errs[n] != nil {
				stop()
			}
		})
	}
	wg.Wait()
	// The failure that ended the streams, rather than the other's cancel.
	var failed error
	for _, err := range errs {
		if err != nil && (failed == nil || errors.Is(failed, context.Canceled)) {
			failed = err
		}
	}
	if failed != nil {
		return modalExecResult{}, failed
	}
	code, err := i.wait(ctx, id)
	if err != nil {
		return modalExecResult{}, err
	}
	return modalExecResult{
		stdout: stdout.Bytes(), stderr: stderr.Bytes(),
		stdoutCut: stdout.Truncated(), stderrCut: stderr.Truncated(), code: code,
	}, nil
}

// putInput sends stdin in chunks numbered from 1, the last marked as the end
// of input.
func (i *modalInstance) putInput(ctx context.Context, execID string, data []byte, hasIn bool) error {
	if !hasIn {
		data = nil
	}
	index := uint64(1)
	for {
		n := min(len(data), modalStdinChunk)
		eof := n == len(data)
		in := pbMsg{}.bytes(1, data[:n]).uint(2, index).boolean(3, eof) // RuntimeInputMessage
		if _, err := i.a.call(ctx, "write command input", "ContainerExecPutInput", pbMsg{}.str(1, execID).msg(2, in)); err != nil {
			return err
		}
		if eof {
			return nil
		}
		data, index = data[n:], index+1
	}
}

// output reads one stream of the exec into w. Each ContainerExecGetOutput
// call long-polls; it is made again from the last batch seen until a batch
// carries the exit code, which ends the stream.
func (i *modalInstance) output(ctx context.Context, execID string, fd uint64, w *sandbox.CappedWriter) error {
	const op = "read command output"
	var last uint64
	for {
		done := false
		req := pbMsg{}.str(1, execID).float(2, modalLongPoll).uint(3, last).uint(4, fd).boolean(5, true)
		err := i.a.stream(ctx, op, "ContainerExecGetOutput", req, func(batch pbFields) (bool, error) {
			items, err := batch.subs(1)
			if err != nil {
				return true, &Error{Vendor: TypeModal, Op: op, Msg: "the answer is not the expected message"}
			}
			for _, it := range items {
				if b := it.raw(3); b != nil { // message_bytes
					_, _ = w.Write(b)
				} else {
					_, _ = w.Write([]byte(it.str(2))) // message, from servers that send text
				}
			}
			last = max(last, batch.uint(2))
			done = batch.has(3) // exit_code: the final batch
			return done, nil
		})
		if err != nil {
			return modalGone(err)
		}
		if done {
			return nil
		}
		// A stream that ended without the final batch is opened again from
		// the last batch seen, after a pause: never a busy loop against a
		// server that keeps ending it.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(modalReopenPause):
		}
	}
}

// modalReopenPause is the pause before a command's output stream is opened
// again.
const modalReopenPause = 50 * time.Millisecond

// wait long-polls ContainerExecWait until the exec completes; -1 when it
// completed without an exit code (a signal).
func (i *modalInstance) wait(ctx context.Context, execID string) (int, error) {
	for {
		resp, err := i.a.call(ctx, "wait for command", "ContainerExecWait", pbMsg{}.str(1, execID).float(2, 10))
		if err != nil {
			return -1, modalGone(err)
		}
		if resp.boolean(2) {
			if !resp.has(1) {
				return -1, nil
			}
			return int(resp.int32(1)), nil
		}
		if err := ctx.Err(); err != nil {
			return -1, err
		}
	}
}

// Run runs the command through sh in the sandbox: `cd` to the directory,
// `env` for the variables and coreutils `timeout` for the time-out (TERM,
// then KILL five seconds later). Stdin is streamed to it.
func (i *modalInstance) Run(ctx context.Context, c sandbox.Command) (sandbox.Result, error) {
	p, err := prepare(i.h.Workdir, c)
	if err != nil {
		return sandbox.Result{}, err
	}
	secs := int(math.Ceil(p.timeout.Seconds()))
	script := fmt.Sprintf("cd %s && %stimeout -k 5 %d %s", shellQuote(p.dir), shellEnv(p.env), secs, shellJoin(p.argv))
	start := time.Now()
	out, err := i.exec(ctx, script, p.stdin, p.hasIn, p.limit, p.timeout+execGrace)
	res := sandbox.Result{ExitCode: -1, Duration: time.Since(start)}
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		return res, err
	}
	res.ExitCode = out.code
	res.Stdout, res.StdoutTruncated = out.stdout, out.stdoutCut
	res.Stderr, res.StderrTruncated = out.stderr, out.stderrCut
	if out.code == timeoutExit && res.Duration >= p.timeout {
		res.ExitCode, res.TimedOut = -1, true
	}
	return res, nil
}

// ReadFile reads the file with head, its size from wc on stderr.
func (i *modalInstance) ReadFile(ctx context.Context, name string, limit int64) (sandbox.File, error) {
	p, err := resolve(i.h.Workdir, name)
	if err != nil {
		return sandbox.File{}, err
	}
	limit = readLimit(limit)
	q := shellQuote(p)
	script := fmt.Sprintf("test -f %s || exit %d; wc -c < %s >&2 && head -c %d %s", q, missingExit, q, limit, q)
	out, err := i.exec(ctx, script, nil, false, int(limit), controlTimeout)
	if err != nil {
		return sandbox.File{}, err
	}
	if out.code == missingExit {
		return sandbox.File{}, fmt.Errorf("%w: %q", sandbox.ErrNotFound, name)
	}
	size, perr := strconv.ParseInt(strings.TrimSpace(string(out.stderr)), 10, 64)
	if out.code != 0 || perr != nil {
		return sandbox.File{}, &Error{Vendor: TypeModal, Op: "read file", Msg: "cannot read the file"}
	}
	return sandbox.File{Data: out.stdout, Size: size, Truncated: size > int64(len(out.stdout))}, nil
}

// WriteFile creates the parent directories and writes the data with cat,
// the data streamed as its stdin.
func (i *modalInstance) WriteFile(ctx context.Context, name string, data []byte) error {
	p, err := resolve(i.h.Workdir, name)
	if err != nil {
		return err
	}
	if err := checkWrite(data); err != nil {
		return err
	}
	script := fmt.Sprintf("mkdir -p %s && cat > %s", shellQuote(path.Dir(p)), shellQuote(p))
	out, err := i.exec(ctx, script, data, true, 4096, controlTimeout)
	if err != nil {
		return err
	}
	if out.code != 0 {
		return &Error{Vendor: TypeModal, Op: "write file", Msg: "cannot write the file"}
	}
	return nil
}

// List lists a directory with GNU find in the sandbox.
func (i *modalInstance) List(ctx context.Context, dir string) ([]sandbox.Entry, error) {
	p, err := resolve(i.h.Workdir, dir)
	if err != nil {
		return nil, err
	}
	out, err := i.exec(ctx, findScript(shellQuote(p)), nil, false, sandbox.MaxOutputLimit, controlTimeout)
	if err != nil {
		return nil, err
	}
	if out.code == missingExit {
		return nil, fmt.Errorf("%w: %q", sandbox.ErrNotFound, dir)
	}
	if out.code != 0 {
		return nil, &Error{Vendor: TypeModal, Op: "list directory", Msg: "find failed"}
	}
	return parseFindListing(string(out.stdout)), nil
}

var _ sandbox.Instance = (*modalInstance)(nil)
