package hosted

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/sandbox"
)

func daytonaSetupTest(t *testing.T, template string) (*fakeDaytona, *Daytona, sandbox.Spec) {
	t.Helper()
	fake := newFakeDaytona(t)
	srv, client := plainServer(t, fake)
	fake.url = srv.URL
	d := NewDaytona(client)
	d.poll = 10 * time.Millisecond
	spec := sandbox.Spec{
		EnvironmentID: "env_01jtest", WorkspaceID: "ws_01jtest",
		Provider:   json.RawMessage(`{"api_url":"` + srv.URL + `/","target":"eu"}`),
		Credential: json.RawMessage(`{"api_key":"` + fake.key + `"}`),
		Template:   json.RawMessage(template),
	}
	return fake, d, spec
}

func TestDaytonaLifecycle(t *testing.T) {
	t.Parallel()
	fake, d, spec := daytonaSetupTest(t, `{"image":"python:3.13-slim","cpu":2,"memory_gb":4,"disk_gb":10,"auto_stop_minutes":0}`)
	ctx := t.Context()

	h, err := d.Create(ctx, spec)
	require.NoError(t, err)
	creates := fake.rec.find(http.MethodPost, "/sandbox")
	require.Len(t, creates, 1)
	require.Equal(t, "Bearer "+fake.key, creates[0].Header.Get("Authorization"))
	require.JSONEq(t, `{
		"buildInfo":{"dockerfileContent":"FROM python:3.13-slim\n"},
		"target":"eu","cpu":2,"memory":4,"disk":10,"autoStopInterval":0,"public":false,
		"labels":{"svc_environment_id":"env_01jtest","svc_workspace_id":"ws_01jtest"}}`, string(creates[0].Body))
	require.NotEmpty(t, fake.rec.find(http.MethodGet, "/sandbox/dt-1"), "waited for the sandbox to start")
	var dh daytonaHandle
	require.NoError(t, json.Unmarshal(h, &dh))
	require.Equal(t, daytonaHandle{SandboxID: "dt-1", ToolboxURL: fake.url + "/toolbox", Workdir: fake.sandboxes["dt-1"].dir}, dh)

	require.NoError(t, d.Stop(ctx, spec, h))
	require.NoError(t, d.Stop(ctx, spec, h), "stopping a stopped sandbox succeeds")
	require.Equal(t, "stopped", fake.sandboxes["dt-1"].state)

	inst, err := d.Open(ctx, spec, h)
	require.NoError(t, err)
	require.Len(t, fake.rec.find(http.MethodPost, "/sandbox/dt-1/start"), 1)
	res, err := inst.Run(ctx, sandbox.Command{Argv: []string{"true"}})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)

	require.ErrorIs(t, d.Renew(ctx, spec, h), sandbox.ErrUnsupported)
	require.NoError(t, d.Destroy(ctx, spec, h))
	require.NoError(t, d.Destroy(ctx, spec, h))
	_, err = d.Open(ctx, spec, h)
	require.ErrorIs(t, err, sandbox.ErrGone)
}

func TestDaytonaSnapshotTemplate(t *testing.T) {
	t.Parallel()
	fake, d, spec := daytonaSetupTest(t, `{"snapshot":"my-snap","auto_delete_minutes":30}`)
	_, err := d.Create(t.Context(), spec)
	require.NoError(t, err)
	creates := fake.rec.find(http.MethodPost, "/sandbox")
	require.JSONEq(t, `{"snapshot":"my-snap","target":"eu","autoDeleteInterval":30,"public":false,
		"labels":{"svc_environment_id":"env_01jtest","svc_workspace_id":"ws_01jtest"}}`, string(creates[0].Body))
}

func TestDaytonaCommandsAndFiles(t *testing.T) {
	t.Parallel()
	fake, d, spec := daytonaSetupTest(t, `{}`)
	ctx := t.Context()
	h, err := d.Create(ctx, spec)
	require.NoError(t, err)
	inst, err := d.Open(ctx, spec, h)
	require.NoError(t, err)
	dir := fake.sandboxes["dt-1"].dir

	res, err := inst.Run(ctx, sandbox.Command{Argv: []string{"sh", "-c", "echo out; echo err >&2; exit 4"}})
	require.NoError(t, err)
	require.Equal(t, 4, res.ExitCode)
	require.Equal(t, "out\nerr\n", string(res.Stdout), "the toolbox combines the streams")

	// Arguments with spaces and both kinds of quotes survive the toolbox's splitter.
	require.NoError(t, inst.WriteFile(ctx, "sub/x", []byte("x")))
	res, err = inst.Run(ctx, sandbox.Command{
		Argv: []string{"sh", "-c", `printf '%s|%s|%s|' "$V" "$0" "$1"; pwd`, `it's "quoted"`, "a  b"},
		Env:  map[string]string{"V": "v 1"}, Dir: "sub",
	})
	require.NoError(t, err)
	require.Equal(t, `v 1|it's "quoted"|a  b|`+filepath.Join(dir, "sub")+"\n", string(res.Stdout))
	execs := fake.rec.find(http.MethodPost, "/toolbox/dt-1/process/execute")
	require.Contains(t, string(execs[len(execs)-1].Body), `"timeout":60`)

	res, err = inst.Run(ctx, sandbox.Command{Argv: []string{"wc", "-c"}, Stdin: []byte("12345")})
	require.NoError(t, err)
	require.Equal(t, "5", strings.TrimSpace(string(res.Stdout)))
	require.Len(t, fake.rec.find(http.MethodDelete, "/toolbox/dt-1/files"), 1, "the stdin file is removed")

	res, err = inst.Run(ctx, sandbox.Command{Argv: []string{"head", "-c", "5000", "/dev/zero"}, OutputLimit: 10})
	require.NoError(t, err)
	require.Len(t, res.Stdout, 10)
	require.True(t, res.StdoutTruncated)

	res, err = inst.Run(ctx, sandbox.Command{Argv: []string{"sleep", "5"}, Timeout: 500 * time.Millisecond})
	require.NoError(t, err)
	require.True(t, res.TimedOut)
	require.Equal(t, -1, res.ExitCode)

	_, err = inst.Run(ctx, sandbox.Command{Argv: []string{"echo", ""}})
	require.ErrorIs(t, err, ErrInvalidCommand)

	data := []byte("hello\x00world")
	require.NoError(t, inst.WriteFile(ctx, "d/e/f.bin", data))
	f, err := inst.ReadFile(ctx, "d/e/f.bin", 0)
	require.NoError(t, err)
	require.Equal(t, sandbox.File{Data: data, Size: int64(len(data))}, f)
	f, err = inst.ReadFile(ctx, "d/e/f.bin", 5)
	require.NoError(t, err)
	require.Equal(t, sandbox.File{Data: data[:5], Size: int64(len(data)), Truncated: true}, f)
	_, err = inst.ReadFile(ctx, "nope", 0)
	require.ErrorIs(t, err, sandbox.ErrNotFound)

	es, err := inst.List(ctx, "d/e")
	require.NoError(t, err)
	require.Len(t, es, 1)
	require.Equal(t, "f.bin", es[0].Name)
	require.Equal(t, int64(len(data)), es[0].Size)
	require.WithinDuration(t, time.Now(), es[0].MTime, time.Minute)
	es, err = inst.List(ctx, ".")
	require.NoError(t, err)
	require.Equal(t, []string{"d", "sub"}, []string{es[0].Name, es[1].Name})
	require.True(t, es[0].Dir)
	_, err = inst.List(ctx, "../..")
	require.ErrorIs(t, err, sandbox.ErrPath)
}

func TestDaytonaQuote(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"a", "it's", "'", "''", `"`, `a "b" 'c'`, "x y  z", "tab\there", "new\nline", "'start", "end'"} {
		q, err := daytonaQuote(arg)
		require.NoError(t, err)
		require.Equal(t, []string{arg}, daytonaSplit(q), arg)
	}
}

func TestDaytonaErrorsAreSanitised(t *testing.T) {
	t.Parallel()
	_, d, spec := daytonaSetupTest(t, `{}`)
	spec.Credential = json.RawMessage(`{"api_key":"dtn_secret_wrong"}`)
	_, err := d.Create(t.Context(), spec)
	require.EqualError(t, err, "envhosted: daytona: create sandbox: HTTP 401: the vendor refused the credential")
}
