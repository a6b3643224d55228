package hosted

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/svcdev/svc/internal/sandbox"
)

// runloopInstance runs commands and moves files in one devbox.
type runloopInstance struct {
	a api
	h runloopHandle
}

// Close releases nothing: calls hold no connection between them.
func (i *runloopInstance) Close() error { return nil }

// runloopExecution is the API's DevboxExecutionDetailView.
type runloopExecution struct {
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	ExitStatus int    `json:"exit_status"`
}

// exec runs a shell command line with execute_sync, bounded by wait.
func (i *runloopInstance) exec(ctx context.Context, command string, wait time.Duration) (runloopExecution, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var out runloopExecution
	err := i.a.do(ctx, call{
		op: "run command", method: http.MethodPost, path: "/v1/devboxes/" + seg(i.h.DevboxID) + "/execute_sync",
		json: map[string]any{"command": command}, out: &out, limit: maxExecAnswer,
	})
	return out, err
}

// timeoutExit is coreutils timeout's exit status when the time-out passed.
const timeoutExit = 124

// Run runs the command through the devbox's shell: `cd` to the directory,
// `env` for the variables and coreutils `timeout` for the time-out (TERM,
// then KILL five seconds later). Stdin goes through a temporary file.
func (i *runloopInstance) Run(ctx context.Context, c sandbox.Command) (sandbox.Result, error) {
	p, err := prepare(i.h.Workdir, c)
	if err != nil {
		return sandbox.Result{}, err
	}
	secs := int(math.Ceil(p.timeout.Seconds()))
	line := fmt.Sprintf("%stimeout -k 5 %d %s", shellEnv(p.env), secs, shellJoin(p.argv))
	script := "cd " + shellQuote(p.dir) + " && " + line
	if p.hasIn {
		in := "/tmp/.svc-stdin-" + randomName()
		if err := i.upload(ctx, in, p.stdin); err != nil {
			return sandbox.Result{}, err
		}
		q := shellQuote(in)
		script = "cd " + shellQuote(p.dir) + " && " + line + " < " + q + "; s=$?; rm -f " + q + "; exit $s"
	}
	start := time.Now()
	out, err := i.exec(ctx, script, p.timeout+execGrace)
	res := sandbox.Result{ExitCode: -1, Duration: time.Since(start)}
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		return res, err
	}
	res.ExitCode = out.ExitStatus
	res.Stdout, res.StdoutTruncated = clip([]byte(out.Stdout), p.limit)
	res.Stderr, res.StderrTruncated = clip([]byte(out.Stderr), p.limit)
	if out.ExitStatus == timeoutExit && res.Duration >= p.timeout {
		res.ExitCode, res.TimedOut = -1, true
	}
	return res, nil
}

func (i *runloopInstance) upload(ctx context.Context, p string, data []byte) error {
	body, ctype, err := multipartFile(map[string]string{"path": p}, "file", path.Base(p), data)
	if err != nil {
		return fmt.Errorf("envhosted: runloop: encode upload: %w", err)
	}
	return i.a.do(ctx, call{
		op: "write file", method: http.MethodPost, path: "/v1/devboxes/" + seg(i.h.DevboxID) + "/upload_file",
		body: body, ctype: ctype,
	})
}

// ReadFile downloads the file with download_file. When the download is
// refused, a `test` in the devbox tells a missing file apart.
func (i *runloopInstance) ReadFile(ctx context.Context, name string, limit int64) (sandbox.File, error) {
	p, err := resolve(i.h.Workdir, name)
	if err != nil {
		return sandbox.File{}, err
	}
	limit = readLimit(limit)
	var f sandbox.File
	err = i.a.do(ctx, call{
		op: "read file", method: http.MethodPost, path: "/v1/devboxes/" + seg(i.h.DevboxID) + "/download_file",
		json: map[string]any{"path": p}, headers: http.Header{"Accept": {"application/octet-stream"}},
		raw: func(resp *http.Response) error {
			var err error
			f, err = readBounded(resp, limit)
			if err != nil {
				return &Error{Vendor: TypeRunloop, Op: "read file", Msg: "the download broke off"}
			}
			return nil
		},
	})
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.Status >= 400 && e.Status < 500 {
			if out, terr := i.exec(ctx, "test -f "+shellQuote(p), controlTimeout); terr == nil && out.ExitStatus != 0 {
				return sandbox.File{}, fmt.Errorf("%w: %q", sandbox.ErrNotFound, name)
			}
		}
		return sandbox.File{}, err
	}
	return f, nil
}

// WriteFile creates the parent directories with `mkdir -p` and uploads the
// file with upload_file.
func (i *runloopInstance) WriteFile(ctx context.Context, name string, data []byte) error {
	p, err := resolve(i.h.Workdir, name)
	if err != nil {
		return err
	}
	if err := checkWrite(data); err != nil {
		return err
	}
	if dir := path.Dir(p); dir != i.h.Workdir {
		out, err := i.exec(ctx, "mkdir -p "+shellQuote(dir), controlTimeout)
		if err != nil {
			return err
		}
		if out.ExitStatus != 0 {
			return &Error{Vendor: TypeRunloop, Op: "write file", Msg: "cannot create the parent directory"}
		}
	}
	return i.upload(ctx, p, data)
}

// missingExit is the exit status the listing and reading scripts give for a
// missing directory or file.
const missingExit = 44

// List lists a directory with GNU find in the devbox (Runloop has no listing
// call).
func (i *runloopInstance) List(ctx context.Context, dir string) ([]sandbox.Entry, error) {
	p, err := resolve(i.h.Workdir, dir)
	if err != nil {
		return nil, err
	}
	out, err := i.exec(ctx, findScript(shellQuote(p)), controlTimeout)
	if err != nil {
		return nil, err
	}
	if out.ExitStatus == missingExit {
		return nil, fmt.Errorf("%w: %q", sandbox.ErrNotFound, dir)
	}
	if out.ExitStatus != 0 {
		return nil, &Error{Vendor: TypeRunloop, Op: "list directory", Msg: "find failed"}
	}
	return parseFindListing(out.Stdout), nil
}

// findScript lists the directory dir (a quoted shell word): type, size,
// modification time and name of each entry, NUL-terminated, at most twice
// the listing cap; exit status missingExit when it is not a directory.
func findScript(dir string) string {
	return fmt.Sprintf("test -d %s || exit %d; cd %s && find . -mindepth 1 -maxdepth 1 -printf '%%y/%%s/%%T@/%%f\\0' | head -z -n %d",
		dir, missingExit, dir, sandbox.MaxListEntries*2)
}

// parseFindListing reads find's `%y/%s/%T@/%f\0` records.
func parseFindListing(s string) []sandbox.Entry {
	var es []sandbox.Entry
	for rec := range bytes.SplitSeq([]byte(s), []byte{0}) {
		f := strings.SplitN(string(rec), "/", 4)
		if len(f) != 4 || f[3] == "" {
			continue
		}
		size, _ := strconv.ParseInt(f[1], 10, 64)
		var mtime time.Time
		if secs, err := strconv.ParseFloat(f[2], 64); err == nil {
			whole, frac := math.Modf(secs)
			mtime = time.Unix(int64(whole), int64(frac*1e9)).UTC()
		}
		es = append(es, sandbox.Entry{Name: f[3], Dir: f[0] == "d", Size: size, MTime: mtime})
	}
	return sortEntries(es)
}

var _ sandbox.Instance = (*runloopInstance)(nil)
