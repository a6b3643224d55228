package hosted

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"time"

	"github.com/svcdev/svc/internal/sandbox"
)

// e2bInstance talks to one sandbox's envd.
type e2bInstance struct {
	envd api
	h    e2bHandle
}

func newE2BInstance(client *http.Client, h e2bHandle) *e2bInstance {
	hdr := http.Header{
		// envd runs each call as the user named in a Basic authorization
		// header with an empty password.
		"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte(e2bUser+":"))},
	}
	if h.AccessToken != "" {
		hdr.Set("X-Access-Token", h.AccessToken)
	}
	return &e2bInstance{
		envd: api{client: client, vendor: TypeE2B, base: "https://" + e2bEnvdPort + "-" + h.SandboxID + "." + h.Domain, header: hdr},
		h:    h,
	}
}

// Close releases nothing: envd calls hold no connection between them.
func (e *e2bInstance) Close() error { return nil }

// processEvent is process.ProcessEvent in protojson.
type processEvent struct {
	Start *struct {
		PID uint32 `json:"pid"`
	} `json:"start"`
	Data *struct {
		Stdout []byte `json:"stdout"`
		Stderr []byte `json:"stderr"`
	} `json:"data"`
	End *struct {
		ExitCode int32  `json:"exitCode"`
		Exited   bool   `json:"exited"`
		Status   string `json:"status"`
	} `json:"end"`
}

// Run starts the command with envd's Process/Start stream and collects its
// output up to the limit. Stdin is sent with SendInput and closed with
// CloseStdin once the process has started. When the time-out passes, the
// process is killed with SendSignal(SIGKILL).
func (e *e2bInstance) Run(ctx context.Context, c sandbox.Command) (sandbox.Result, error) {
	p, err := prepare(e.h.Workdir, c)
	if err != nil {
		return sandbox.Result{}, err
	}
	runCtx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	envs := p.env
	if envs == nil {
		envs = map[string]string{}
	}
	msg, err := envelope(map[string]any{
		"process": map[string]any{"cmd": p.argv[0], "args": p.argv[1:], "envs": envs, "cwd": p.dir},
		"stdin":   p.hasIn,
	})
	if err != nil {
		return sandbox.Result{}, fmt.Errorf("envhosted: e2b: encode command: %w", err)
	}
	stdout, stderr := sandbox.NewCappedWriter(p.limit), sandbox.NewCappedWriter(p.limit)
	var (
		pid      uint32
		end      *processEvent
		inputErr = make(chan error, 1)
	)
	start := time.Now()
	streamErr := e.envd.do(runCtx, call{
		op: "run command", method: http.MethodPost, path: "/process.Process/Start",
		body: bytes.NewReader(msg), ctype: "application/connect+json",
		headers: http.Header{"Connect-Protocol-Version": {connectVersion}, "Keepalive-Ping-Interval": {"30"}},
		raw: func(resp *http.Response) error {
			sr := &streamReader{r: resp.Body}
			for {
				b, last, code, err := sr.next()
				if err != nil {
					return &Error{Vendor: TypeE2B, Op: "run command", Msg: "the output stream broke off"}
				}
				if last {
					if code != "" && end == nil {
						return &Error{Vendor: TypeE2B, Op: "run command", Msg: "envd refused the command (" + code + ")"}
					}
					return nil
				}
				var ev struct {
					Event processEvent `json:"event"`
				}
				if err := json.Unmarshal(b, &ev); err != nil {
					return &Error{Vendor: TypeE2B, Op: "run command", Msg: "the output stream is not the expected JSON"}
				}
				switch {
				case ev.Event.Start != nil:
					pid = ev.Event.Start.PID
					if p.hasIn {
						go func() { inputErr <- e.sendStdin(runCtx, pid, p.stdin) }()
					}
				case ev.Event.Data != nil:
					_, _ = stdout.Write(ev.Event.Data.Stdout)
					_, _ = stderr.Write(ev.Event.Data.Stderr)
				case ev.Event.End != nil:
					ev := ev.Event
					end = &ev
				}
			}
		},
	})
	res := sandbox.Result{
		ExitCode: -1,
		Stdout:   stdout.Bytes(), StdoutTruncated: stdout.Truncated(),
		Stderr: stderr.Bytes(), StderrTruncated: stderr.Truncated(),
		Duration: time.Since(start),
	}
	if end != nil {
		if end.End.Exited {
			res.ExitCode = int(end.End.ExitCode)
		}
		return res, nil
	}
	if runCtx.Err() != nil && pid != 0 {
		e.kill(pid)
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if runCtx.Err() != nil {
		res.TimedOut = true
		return res, nil
	}
	if streamErr == nil {
		streamErr = &Error{Vendor: TypeE2B, Op: "run command", Msg: "the stream ended without the command's end"}
	}
	select {
	case err := <-inputErr:
		if err != nil {
			return res, err
		}
	default:
	}
	return res, streamErr
}

// sendStdin writes the command's input in chunks and closes its stdin.
func (e *e2bInstance) sendStdin(ctx context.Context, pid uint32, data []byte) error {
	const chunk = 64 << 10
	sel := map[string]any{"pid": pid}
	for len(data) > 0 {
		n := min(chunk, len(data))
		req := map[string]any{"process": sel, "input": map[string]any{"stdin": data[:n]}}
		if err := connectUnary(ctx, e.envd, "send input", "/process.Process/SendInput", req, &struct{}{}); err != nil {
			return err
		}
		data = data[n:]
	}
	return connectUnary(ctx, e.envd, "close input", "/process.Process/CloseStdin", map[string]any{"process": sel}, &struct{}{})
}

// kill ends a command whose time-out passed; the caller's context may be
// over, so it has its own bound. A failure leaves the process to envd.
func (e *e2bInstance) kill(pid uint32) {
	ctx, cancel := context.WithTimeout(context.Background(), killTimeout)
	defer cancel()
	req := map[string]any{"process": map[string]any{"pid": pid}, "signal": "SIGNAL_SIGKILL"}
	_ = connectUnary(ctx, e.envd, "kill command", "/process.Process/SendSignal", req, &struct{}{})
}

// ReadFile downloads the file with envd's GET /files.
func (e *e2bInstance) ReadFile(ctx context.Context, name string, limit int64) (sandbox.File, error) {
	p, err := resolve(e.h.Workdir, name)
	if err != nil {
		return sandbox.File{}, err
	}
	limit = readLimit(limit)
	var f sandbox.File
	err = e.envd.do(ctx, call{
		op: "read file", method: http.MethodGet, path: "/files", query: url.Values{"path": {p}, "username": {e2bUser}},
		raw: func(resp *http.Response) error {
			data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
			if err != nil {
				return &Error{Vendor: TypeE2B, Op: "read file", Msg: "the download broke off"}
			}
			f.Size = resp.ContentLength
			if int64(len(data)) > limit {
				f.Data, f.Truncated = data[:limit], true
				if f.Size < 0 {
					rest, _ := io.Copy(io.Discard, resp.Body)
					f.Size = int64(len(data)) + rest
				}
			} else {
				f.Data, f.Size = data, int64(len(data))
			}
			return nil
		},
	})
	if err != nil {
		return sandbox.File{}, err
	}
	return f, nil
}

// WriteFile uploads the file with envd's multipart POST /files, which
// creates missing parent directories.
func (e *e2bInstance) WriteFile(ctx context.Context, name string, data []byte) error {
	p, err := resolve(e.h.Workdir, name)
	if err != nil {
		return err
	}
	if err := checkWrite(data); err != nil {
		return err
	}
	body, ctype, err := multipartFile(nil, "file", path.Base(p), data)
	if err != nil {
		return fmt.Errorf("envhosted: e2b: encode upload: %w", err)
	}
	return e.envd.do(ctx, call{
		op: "write file", method: http.MethodPost, path: "/files", query: url.Values{"path": {p}, "username": {e2bUser}},
		body: body, ctype: ctype,
	})
}

// e2bEntry is filesystem.EntryInfo in protojson.
type e2bEntry struct {
	Name         string    `json:"name"`
	Type         string    `json:"type"`
	Size         flexInt   `json:"size"`
	ModifiedTime time.Time `json:"modifiedTime"`
}

// List lists a directory with envd's Filesystem/ListDir at depth 1.
func (e *e2bInstance) List(ctx context.Context, dir string) ([]sandbox.Entry, error) {
	p, err := resolve(e.h.Workdir, dir)
	if err != nil {
		return nil, err
	}
	var out struct {
		Entries []e2bEntry `json:"entries"`
	}
	if err := connectUnary(ctx, e.envd, "list directory", "/filesystem.Filesystem/ListDir", map[string]any{"path": p, "depth": 1}, &out); err != nil {
		return nil, err
	}
	es := make([]sandbox.Entry, 0, len(out.Entries))
	for _, en := range out.Entries {
		es = append(es, sandbox.Entry{Name: en.Name, Dir: en.Type == "FILE_TYPE_DIRECTORY", Size: int64(en.Size), MTime: en.ModifiedTime})
	}
	return sortEntries(es), nil
}

var _ sandbox.Instance = (*e2bInstance)(nil)
var _ sandbox.Driver = (*E2B)(nil)
