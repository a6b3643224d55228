package hosted

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/svcdev/svc/internal/sandbox"
)

// The Kubernetes exec channel protocol, version 5: every WebSocket message
// starts with its channel; 0 stdin, 1 stdout, 2 stderr, 3 the final status;
// a message [255, channel] closes a channel (stdin's end of file).
const (
	kubeExecProtocol = "v5.channel.k8s.io"
	kubeChanStdin    = 0
	kubeChanStdout   = 1
	kubeChanStderr   = 2
	kubeChanStatus   = 3
	kubeChanClose    = 255
	kubeStdinChunk   = 32 << 10
)

// kubeInstance runs commands and moves files in one pod through exec.
type kubeInstance struct {
	s kubeSetup
	h kubeHandle
}

// Close releases nothing: each exec has its own connection.
func (i *kubeInstance) Close() error { return nil }

// kubeOutput is a finished exec.
type kubeOutput struct {
	stdout, stderr *sandbox.CappedWriter
	exit           int
	timedOut       bool // wait passed before the status came
}

// exec runs argv in the pod's container, sending stdin (closed after) when
// hasIn, keeping outLimit bytes of stdout and errLimit of stderr, for at
// most wait.
func (i *kubeInstance) exec(ctx context.Context, argv []string, stdin []byte, hasIn bool, outLimit, errLimit int, wait time.Duration) (kubeOutput, error) {
	out := kubeOutput{stdout: sandbox.NewCappedWriter(outLimit), stderr: sandbox.NewCappedWriter(errLimit), exit: -1}
	q := url.Values{"container": {kubeContainer}, "stdout": {"true"}, "stderr": {"true"}, "command": argv}
	if hasIn {
		q.Set("stdin", "true")
	}
	runCtx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	req, err := i.s.api.request(runCtx, call{op: "run command", method: http.MethodGet, path: i.s.podPath(i.h.Pod) + "/exec", query: q})
	if err != nil {
		return out, err
	}
	conn, resp, err := wsDial(runCtx, i.s.api.client, req, kubeExecProtocol)
	if err != nil {
		return out, callError(ctx, TypeKubernetes, "run command", err)
	}
	if resp != nil {
		return out, gone(statusError(TypeKubernetes, "run command", resp.StatusCode))
	}
	defer conn.Close()
	stop := context.AfterFunc(runCtx, func() { _ = conn.Close() })
	defer stop()
	if hasIn {
		go func() {
			for len(stdin) > 0 {
				n := min(kubeStdinChunk, len(stdin))
				if conn.WriteMessage(append([]byte{kubeChanStdin}, stdin[:n]...)) != nil {
					return
				}
				stdin = stdin[n:]
			}
			_ = conn.WriteMessage([]byte{kubeChanClose, kubeChanStdin})
		}()
	}
	for {
		msg, err := conn.ReadMessage()
		if err != nil {
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
			if runCtx.Err() != nil {
				out.timedOut = true
				return out, nil
			}
			return out, &Error{Vendor: TypeKubernetes, Op: "run command", Msg: "the exec stream ended without the command's status"}
		}
		if len(msg) == 0 {
			continue
		}
		switch msg[0] {
		case kubeChanStdout:
			_, _ = out.stdout.Write(msg[1:])
		case kubeChanStderr:
			_, _ = out.stderr.Write(msg[1:])
		case kubeChanStatus:
			var st kubeStatus
			if err := json.Unmarshal(msg[1:], &st); err != nil {
				return out, &Error{Vendor: TypeKubernetes, Op: "run command", Msg: "the exec status is not the expected JSON"}
			}
			code, err := st.exitCode()
			out.exit = code
			return out, err
		}
	}
}

// Run runs the command through sh: `cd` to the directory, `env` for the
// variables and coreutils `timeout` for the time-out; stdin goes over the
// exec stream.
func (i *kubeInstance) Run(ctx context.Context, c sandbox.Command) (sandbox.Result, error) {
	p, err := prepare(i.h.Workdir, c)
	if err != nil {
		return sandbox.Result{}, err
	}
	secs := int(math.Ceil(p.timeout.Seconds()))
	script := fmt.Sprintf(`cd "$0" && exec %stimeout -k 5 %d "$@"`, shellEnv(p.env), secs)
	argv := append([]string{"sh", "-c", script, p.dir}, p.argv...)
	start := time.Now()
	out, err := i.exec(ctx, argv, p.stdin, p.hasIn, p.limit, p.limit, p.timeout+execGrace)
	res := sandbox.Result{
		ExitCode: out.exit,
		Stdout:   out.stdout.Bytes(), StdoutTruncated: out.stdout.Truncated(),
		Stderr: out.stderr.Bytes(), StderrTruncated: out.stderr.Truncated(),
		Duration: time.Since(start), TimedOut: out.timedOut,
	}
	if err != nil {
		return res, err
	}
	if out.exit == timeoutExit && res.Duration >= p.timeout {
		res.ExitCode, res.TimedOut = -1, true
	}
	return res, nil
}

// WriteFile streams the data to `cat` into a temporary file beside the
// target, renamed over it.
func (i *kubeInstance) WriteFile(ctx context.Context, name string, data []byte) error {
	p, err := resolve(i.h.Workdir, name)
	if err != nil {
		return err
	}
	if err := checkWrite(data); err != nil {
		return err
	}
	script := `mkdir -p "$(dirname "$0")" && cat > "$1" && mv -f "$1" "$0" || { rm -f "$1"; exit 1; }`
	tmp := p + ".svc-tmp-" + randomName()
	out, err := i.exec(ctx, []string{"sh", "-c", script, p, tmp}, data, true, 4096, 4096, controlTimeout)
	if err != nil {
		return err
	}
	if out.exit != 0 || out.timedOut {
		return &Error{Vendor: TypeKubernetes, Op: "write file", Msg: "the container could not write the file"}
	}
	return nil
}

// ReadFile reads the file's size (on stderr) and first bytes (on stdout).
func (i *kubeInstance) ReadFile(ctx context.Context, name string, limit int64) (sandbox.File, error) {
	p, err := resolve(i.h.Workdir, name)
	if err != nil {
		return sandbox.File{}, err
	}
	limit = readLimit(limit)
	script := fmt.Sprintf(`test -f "$0" || exit %d; stat -c %%s "$0" >&2 && head -c %d "$0"`, missingExit, limit)
	out, err := i.exec(ctx, []string{"sh", "-c", script, p}, nil, false, int(limit), 4096, controlTimeout)
	if err != nil {
		return sandbox.File{}, err
	}
	if out.exit == missingExit {
		return sandbox.File{}, fmt.Errorf("%w: %q", sandbox.ErrNotFound, name)
	}
	size, serr := strconv.ParseInt(strings.TrimSpace(out.stderr.String()), 10, 64)
	if out.exit != 0 || out.timedOut || serr != nil {
		return sandbox.File{}, &Error{Vendor: TypeKubernetes, Op: "read file", Msg: "the container could not read the file"}
	}
	data := out.stdout.Bytes()
	return sandbox.File{Data: data, Size: size, Truncated: size > int64(len(data))}, nil
}

// List lists a directory with GNU find through exec.
func (i *kubeInstance) List(ctx context.Context, dir string) ([]sandbox.Entry, error) {
	p, err := resolve(i.h.Workdir, dir)
	if err != nil {
		return nil, err
	}
	out, err := i.exec(ctx, []string{"sh", "-c", findScript(`"$0"`), p}, nil, false, 8<<20, 4096, controlTimeout)
	if err != nil {
		return nil, err
	}
	if out.exit == missingExit {
		return nil, fmt.Errorf("%w: %q", sandbox.ErrNotFound, dir)
	}
	if out.exit != 0 || out.timedOut {
		return nil, &Error{Vendor: TypeKubernetes, Op: "list directory", Msg: "find failed"}
	}
	return parseFindListing(out.stdout.String()), nil
}

var _ sandbox.Instance = (*kubeInstance)(nil)
