package hosted

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/svcdev/svc/internal/sandbox"
)

// maxExecAnswer bounds an execute answer read into memory. Daytona, Runloop
// and Fly return a command's whole output in one JSON answer, which svc
// cannot stream; the output limit is applied after decoding.
const maxExecAnswer = 64 << 20

// execGrace is how much longer than a command's time-out svc waits for a
// vendor that enforces the time-out itself to answer.
const execGrace = 30 * time.Second

// daytonaInstance talks to one sandbox's toolbox.
type daytonaInstance struct {
	tb api
	h  daytonaHandle
}

// Close releases nothing: toolbox calls hold no connection between them.
func (i *daytonaInstance) Close() error { return nil }

// daytonaQuote quotes one argument for the toolbox's command splitter, which
// splits on spaces outside quotes and strips single and double quotes
// without escapes: runs without a single quote go in single quotes, single
// quotes in double quotes. An empty argument cannot be expressed.
func daytonaQuote(s string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("%w: daytona cannot pass an empty argument", ErrInvalidCommand)
	}
	var b strings.Builder
	for part := range strings.SplitSeq(s, "'") {
		if part != "" {
			b.WriteString("'" + part + "'")
		}
		b.WriteString(`"'"`)
	}
	return strings.TrimSuffix(b.String(), `"'"`), nil
}

func daytonaCommand(argv []string) (string, error) {
	q := make([]string, len(argv))
	for i, a := range argv {
		s, err := daytonaQuote(a)
		if err != nil {
			return "", err
		}
		q[i] = s
	}
	return strings.Join(q, " "), nil
}

// Run runs the command with the toolbox's process/execute, which runs argv
// without a shell, enforces the time-out itself and returns stdout and
// stderr combined (in Result.Stdout). Stdin goes through a temporary file
// and `sh`.
func (i *daytonaInstance) Run(ctx context.Context, c sandbox.Command) (sandbox.Result, error) {
	p, err := prepare(i.h.Workdir, c)
	if err != nil {
		return sandbox.Result{}, err
	}
	argv := p.argv
	if p.hasIn {
		in := "/tmp/.svc-stdin-" + randomName()
		if err := i.upload(ctx, in, p.stdin); err != nil {
			return sandbox.Result{}, err
		}
		defer i.remove(in)
		argv = append([]string{"sh", "-c", `exec "$@" < "$0"`, in}, argv...)
	}
	cmd, err := daytonaCommand(argv)
	if err != nil {
		return sandbox.Result{}, err
	}
	secs := int(math.Ceil(p.timeout.Seconds()))
	body := map[string]any{"command": cmd, "cwd": p.dir, "timeout": secs}
	if len(p.env) > 0 {
		body["envs"] = p.env
	}
	runCtx, cancel := context.WithTimeout(ctx, p.timeout+execGrace)
	defer cancel()
	var out struct {
		ExitCode *int   `json:"exitCode"`
		Code     *int   `json:"code"` // older toolboxes
		Result   string `json:"result"`
	}
	start := time.Now()
	err = i.tb.do(runCtx, call{op: "run command", method: http.MethodPost, path: "/process/execute", json: body, out: &out, limit: maxExecAnswer})
	res := sandbox.Result{ExitCode: -1, Duration: time.Since(start)}
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return res, ctx.Err()
	case hasStatus(err, http.StatusRequestTimeout) || runCtx.Err() != nil:
		// The toolbox killed the command at its time-out; its output is lost.
		res.TimedOut = true
		return res, nil
	default:
		return res, err
	}
	switch {
	case out.ExitCode != nil:
		res.ExitCode = *out.ExitCode
	case out.Code != nil:
		res.ExitCode = *out.Code
	}
	res.Stdout, res.StdoutTruncated = clip([]byte(out.Result), p.limit)
	return res, nil
}

func (i *daytonaInstance) upload(ctx context.Context, p string, data []byte) error {
	body, ctype, err := multipartFile(nil, "file", path.Base(p), data)
	if err != nil {
		return fmt.Errorf("envhosted: daytona: encode upload: %w", err)
	}
	return i.tb.do(ctx, call{op: "write file", method: http.MethodPost, path: "/files/upload", query: url.Values{"path": {p}}, body: body, ctype: ctype})
}

// remove deletes a temporary file; a failure leaves it in /tmp.
func (i *daytonaInstance) remove(p string) {
	ctx, cancel := context.WithTimeout(context.Background(), killTimeout)
	defer cancel()
	_ = i.tb.do(ctx, call{op: "remove file", method: http.MethodDelete, path: "/files", query: url.Values{"path": {p}}})
}

// ReadFile downloads the file with the toolbox's files/download.
func (i *daytonaInstance) ReadFile(ctx context.Context, name string, limit int64) (sandbox.File, error) {
	p, err := resolve(i.h.Workdir, name)
	if err != nil {
		return sandbox.File{}, err
	}
	limit = readLimit(limit)
	var f sandbox.File
	err = i.tb.do(ctx, call{
		op: "read file", method: http.MethodGet, path: "/files/download", query: url.Values{"path": {p}},
		raw: func(resp *http.Response) error {
			var err error
			f, err = readBounded(resp, limit)
			if err != nil {
				return &Error{Vendor: TypeDaytona, Op: "read file", Msg: "the download broke off"}
			}
			return nil
		},
	})
	return f, err
}

// readBounded reads up to limit bytes of an answer, counting the rest when
// the vendor gave no length.
func readBounded(resp *http.Response, limit int64) (sandbox.File, error) {
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return sandbox.File{}, err
	}
	f := sandbox.File{Data: data, Size: int64(len(data))}
	if int64(len(data)) > limit {
		f.Data, f.Truncated, f.Size = data[:limit], true, resp.ContentLength
		if f.Size < 0 {
			rest, err := io.Copy(io.Discard, resp.Body)
			if err != nil {
				return sandbox.File{}, err
			}
			f.Size = int64(len(data)) + rest
		}
	}
	return f, nil
}

// WriteFile uploads the file with the toolbox's files/upload, which creates
// missing parent directories.
func (i *daytonaInstance) WriteFile(ctx context.Context, name string, data []byte) error {
	p, err := resolve(i.h.Workdir, name)
	if err != nil {
		return err
	}
	if err := checkWrite(data); err != nil {
		return err
	}
	return i.upload(ctx, p, data)
}

// daytonaFileInfo is the toolbox's FileInfo.
type daytonaFileInfo struct {
	Name    string `json:"name"`
	IsDir   bool   `json:"isDir"`
	Size    int64  `json:"size"`
	ModTime string `json:"modTime"`
}

// List lists a directory with the toolbox's GET /files.
func (i *daytonaInstance) List(ctx context.Context, dir string) ([]sandbox.Entry, error) {
	p, err := resolve(i.h.Workdir, dir)
	if err != nil {
		return nil, err
	}
	var infos []daytonaFileInfo
	if err := i.tb.do(ctx, call{op: "list directory", method: http.MethodGet, path: "/files", query: url.Values{"path": {p}}, out: &infos}); err != nil {
		return nil, err
	}
	es := make([]sandbox.Entry, 0, len(infos))
	for _, fi := range infos {
		es = append(es, sandbox.Entry{Name: fi.Name, Dir: fi.IsDir, Size: fi.Size, MTime: parseGoTime(fi.ModTime)})
	}
	return sortEntries(es), nil
}

// parseGoTime reads a time written by Go's Time.String (the toolbox's
// modTime) or RFC 3339; the zero time when it is neither.
func parseGoTime(s string) time.Time {
	if i := strings.Index(s, " m="); i >= 0 {
		s = s[:i] // monotonic clock reading
	}
	for _, layout := range []string{"2006-01-02 15:04:05.999999999 -0700 MST", time.RFC3339Nano} {
		if t, err := time.Parse(layout, s); err == nil {
			return t
		}
	}
	return time.Time{}
}

var _ sandbox.Instance = (*daytonaInstance)(nil)
