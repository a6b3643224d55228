package hosted

import (
	"context"
	"encoding/base64"
	"fmt"
	"math"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/svcdev/svc/internal/sandbox"
)

// flyInstance runs commands and moves files in one machine through exec.
type flyInstance struct {
	a api
	h flyHandle
}

// Close releases nothing: exec calls hold no connection between them.
func (i *flyInstance) Close() error { return nil }

// flyExecution is the exec endpoint's answer.
type flyExecution struct {
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	ExitCode   int    `json:"exit_code"`
	ExitSignal int    `json:"exit_signal"`
}

// exec runs argv (no shell) in the machine, bounded by wait; Fly gets the
// same bound as its time-out.
func (i *flyInstance) exec(ctx context.Context, argv []string, wait time.Duration) (flyExecution, error) {
	ctx, cancel := context.WithTimeout(ctx, wait+execGrace)
	defer cancel()
	var out flyExecution
	err := i.a.do(ctx, call{
		op: "run command", method: http.MethodPost, path: "/machines/" + seg(i.h.MachineID) + "/exec",
		json: map[string]any{"command": argv, "timeout": int(math.Ceil(wait.Seconds()))}, out: &out, limit: maxExecAnswer,
	})
	return out, err
}

// Run runs the command through sh: `cd` to the directory, `env` for the
// variables and coreutils `timeout` for the time-out. Stdin goes through a
// temporary file written beforehand.
func (i *flyInstance) Run(ctx context.Context, c sandbox.Command) (sandbox.Result, error) {
	p, err := prepare(i.h.Workdir, c)
	if err != nil {
		return sandbox.Result{}, err
	}
	secs := int(math.Ceil(p.timeout.Seconds()))
	line := fmt.Sprintf(`%stimeout -k 5 %d "$@"`, shellEnv(p.env), secs)
	script := `cd "$0" && exec ` + line
	if p.hasIn {
		in := "/tmp/.svc-stdin-" + randomName()
		if err := i.writeBase64(ctx, in, p.stdin); err != nil {
			return sandbox.Result{}, err
		}
		q := shellQuote(in)
		script = `cd "$0" && { ` + line + " < " + q + "; s=$?; rm -f " + q + "; exit $s; }"
	}
	argv := append([]string{"sh", "-c", script, p.dir}, p.argv...)
	start := time.Now()
	out, err := i.exec(ctx, argv, p.timeout+10*time.Second)
	res := sandbox.Result{ExitCode: -1, Duration: time.Since(start)}
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		return res, err
	}
	if out.ExitSignal == 0 {
		res.ExitCode = out.ExitCode
	}
	res.Stdout, res.StdoutTruncated = clip([]byte(out.Stdout), p.limit)
	res.Stderr, res.StderrTruncated = clip([]byte(out.Stderr), p.limit)
	if out.ExitCode == timeoutExit && res.Duration >= p.timeout {
		res.ExitCode, res.TimedOut = -1, true
	}
	return res, nil
}

// flyChunk is the bytes of a file sent per exec call: base64 of it stays
// under Linux's 128 KiB bound on one argument.
const flyChunk = 90 << 10

// writeBase64 writes data to the absolute path p: chunks of base64 appended
// to a temporary file beside it, renamed over p at the end.
func (i *flyInstance) writeBase64(ctx context.Context, p string, data []byte) error {
	tmp := path.Join(path.Dir(p), ".svc-tmp-"+randomName())
	first := true
	for first || len(data) > 0 {
		n := min(flyChunk, len(data))
		script := `printf %s "$1" | base64 -d >> "$0"`
		if first {
			script = `mkdir -p "$(dirname "$0")" && printf %s "$1" | base64 -d > "$0"`
		}
		out, err := i.exec(ctx, []string{"sh", "-c", script, tmp, base64.StdEncoding.EncodeToString(data[:n])}, controlTimeout)
		if err != nil {
			return err
		}
		if out.ExitCode != 0 {
			i.removeTmp(tmp)
			return &Error{Vendor: TypeFlyMachines, Op: "write file", Msg: "the machine could not write the file"}
		}
		data, first = data[n:], false
	}
	out, err := i.exec(ctx, []string{"mv", "-f", tmp, p}, controlTimeout)
	if err != nil {
		return err
	}
	if out.ExitCode != 0 {
		i.removeTmp(tmp)
		return &Error{Vendor: TypeFlyMachines, Op: "write file", Msg: "the machine could not move the file into place"}
	}
	return nil
}

func (i *flyInstance) removeTmp(p string) {
	ctx, cancel := context.WithTimeout(context.Background(), killTimeout)
	defer cancel()
	_, _ = i.exec(ctx, []string{"rm", "-f", p}, killTimeout)
}

// WriteFile writes the file in base64 chunks through exec.
func (i *flyInstance) WriteFile(ctx context.Context, name string, data []byte) error {
	p, err := resolve(i.h.Workdir, name)
	if err != nil {
		return err
	}
	if err := checkWrite(data); err != nil {
		return err
	}
	return i.writeBase64(ctx, p, data)
}

// ReadFile reads the file's size and first bytes, in base64, through exec.
func (i *flyInstance) ReadFile(ctx context.Context, name string, limit int64) (sandbox.File, error) {
	p, err := resolve(i.h.Workdir, name)
	if err != nil {
		return sandbox.File{}, err
	}
	limit = readLimit(limit)
	script := fmt.Sprintf(`test -f "$0" || exit %d; stat -c %%s "$0" && head -c %d "$0" | base64 | tr -d '\n'`, missingExit, limit)
	out, err := i.exec(ctx, []string{"sh", "-c", script, p}, controlTimeout)
	if err != nil {
		return sandbox.File{}, err
	}
	if out.ExitCode == missingExit {
		return sandbox.File{}, fmt.Errorf("%w: %q", sandbox.ErrNotFound, name)
	}
	sizeText, b64, ok := strings.Cut(out.Stdout, "\n")
	size, serr := strconv.ParseInt(strings.TrimSpace(sizeText), 10, 64)
	data, derr := base64.StdEncoding.DecodeString(b64)
	if out.ExitCode != 0 || !ok || serr != nil || derr != nil {
		return sandbox.File{}, &Error{Vendor: TypeFlyMachines, Op: "read file", Msg: "the machine could not read the file"}
	}
	return sandbox.File{Data: data, Size: size, Truncated: size > int64(len(data))}, nil
}

// List lists a directory with GNU find through exec.
func (i *flyInstance) List(ctx context.Context, dir string) ([]sandbox.Entry, error) {
	p, err := resolve(i.h.Workdir, dir)
	if err != nil {
		return nil, err
	}
	out, err := i.exec(ctx, []string{"sh", "-c", findScript(`"$0"`), p}, controlTimeout)
	if err != nil {
		return nil, err
	}
	if out.ExitCode == missingExit {
		return nil, fmt.Errorf("%w: %q", sandbox.ErrNotFound, dir)
	}
	if out.ExitCode != 0 {
		return nil, &Error{Vendor: TypeFlyMachines, Op: "list directory", Msg: "find failed"}
	}
	return parseFindListing(out.Stdout), nil
}

var _ sandbox.Instance = (*flyInstance)(nil)
