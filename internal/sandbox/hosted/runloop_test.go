package hosted

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/sandbox"
)

func runloopSetupTest(t *testing.T, template string) (*fakeRunloop, *Runloop, sandbox.Spec) {
	t.Helper()
	fake := newFakeRunloop(t)
	srv, client := plainServer(t, fake)
	d := NewRunloop(client)
	d.poll = 10 * time.Millisecond
	spec := sandbox.Spec{
		EnvironmentID: "env_01jtest", WorkspaceID: "ws_01jtest",
		Provider:   json.RawMessage(`{"base_url":"` + srv.URL + `"}`),
		Credential: json.RawMessage(`{"api_key":"` + fake.key + `"}`),
		Template:   json.RawMessage(template),
	}
	return fake, d, spec
}

func TestRunloopLifecycle(t *testing.T) {
	t.Parallel()
	fake, d, spec := runloopSetupTest(t, `{"blueprint_name":"bp","resource_size":"SMALL","keep_alive_seconds":900}`)
	ctx := t.Context()

	h, err := d.Create(ctx, spec)
	require.NoError(t, err)
	creates := fake.rec.find(http.MethodPost, "/v1/devboxes")
	require.Len(t, creates, 1)
	require.Equal(t, "Bearer "+fake.key, creates[0].Header.Get("Authorization"))
	require.JSONEq(t, `{"name":"env_01jtest","blueprint_name":"bp",
		"metadata":{"svc_environment_id":"env_01jtest","svc_workspace_id":"ws_01jtest"},
		"launch_parameters":{"resource_size_request":"SMALL","after_idle":{"idle_time_seconds":900,"on_idle":"suspend"}}}`, string(creates[0].Body))
	var rh runloopHandle
	require.NoError(t, json.Unmarshal(h, &rh))
	require.Equal(t, runloopHandle{DevboxID: "dbx_1", Workdir: fake.devices["dbx_1"].home}, rh)

	require.NoError(t, d.Stop(ctx, spec, h))
	require.NoError(t, d.Stop(ctx, spec, h), "suspending a suspended devbox succeeds")
	require.NoError(t, d.Renew(ctx, spec, h), "a suspended devbox needs no keep-alive")
	require.Equal(t, "suspended", fake.devices["dbx_1"].status)
	inst, err := d.Open(ctx, spec, h)
	require.NoError(t, err)
	require.Len(t, fake.rec.find(http.MethodPost, "/v1/devboxes/dbx_1/resume"), 1)
	require.Equal(t, "running", fake.devices["dbx_1"].status)

	require.NoError(t, d.Renew(ctx, spec, h))
	require.Len(t, fake.rec.find(http.MethodPost, "/v1/devboxes/dbx_1/keep_alive"), 2)

	res, err := inst.Run(ctx, sandbox.Command{Argv: []string{"true"}})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)

	require.NoError(t, d.Destroy(ctx, spec, h))
	require.NoError(t, d.Destroy(ctx, spec, h), "shutting down a shut-down devbox succeeds")
	_, err = d.Open(ctx, spec, h)
	require.ErrorIs(t, err, sandbox.ErrGone)
	require.ErrorIs(t, d.Renew(ctx, spec, h), sandbox.ErrGone)

	delete(fake.devices, "dbx_1")
	require.NoError(t, d.Destroy(ctx, spec, h), "an unknown devbox counts as destroyed")
	_, err = d.Open(ctx, spec, h)
	require.ErrorIs(t, err, sandbox.ErrGone)
}

func TestRunloopCommandsAndFiles(t *testing.T) {
	t.Parallel()
	fake, d, spec := runloopSetupTest(t, `{}`)
	ctx := t.Context()
	h, err := d.Create(ctx, spec)
	require.NoError(t, err)
	creates := fake.rec.find(http.MethodPost, "/v1/devboxes")
	require.Contains(t, string(creates[0].Body), `"after_idle":{"idle_time_seconds":3600,"on_idle":"suspend"}`)
	inst, err := d.Open(ctx, spec, h)
	require.NoError(t, err)
	home := fake.devices["dbx_1"].home

	res, err := inst.Run(ctx, sandbox.Command{Argv: []string{"sh", "-c", "echo out; echo err >&2; exit 5"}})
	require.NoError(t, err)
	require.Equal(t, 5, res.ExitCode)
	require.Equal(t, "out\n", string(res.Stdout))
	require.Equal(t, "err\n", string(res.Stderr))

	require.NoError(t, inst.WriteFile(ctx, "a b/c.txt", []byte("content")))
	res, err = inst.Run(ctx, sandbox.Command{
		Argv: []string{"sh", "-c", `printf '%s|%s|' "$V" "$0"; pwd`, `it's; $(rm -rf /) "x"`},
		Env:  map[string]string{"V": "it's v"}, Dir: "a b",
	})
	require.NoError(t, err)
	require.Equal(t, `it's v|it's; $(rm -rf /) "x"|`+filepath.Join(home, "a b")+"\n", string(res.Stdout))

	res, err = inst.Run(ctx, sandbox.Command{Argv: []string{"wc", "-c"}, Stdin: []byte("abcdef")})
	require.NoError(t, err)
	require.Equal(t, "6", strings.TrimSpace(string(res.Stdout)))
	uploads := fake.rec.find(http.MethodPost, "/v1/devboxes/dbx_1/upload_file")
	in := regexp.MustCompile(`/tmp/\.svc-stdin-[0-9a-f]+`).FindString(string(uploads[len(uploads)-1].Body))
	require.NotEmpty(t, in)
	require.NoFileExists(t, in, "the stdin file is removed after the command")

	res, err = inst.Run(ctx, sandbox.Command{Argv: []string{"sh", "-c", "head -c 3000 /dev/zero; head -c 3000 /dev/zero >&2"}, OutputLimit: 7})
	require.NoError(t, err)
	require.Len(t, res.Stdout, 7)
	require.Len(t, res.Stderr, 7)
	require.True(t, res.StdoutTruncated)
	require.True(t, res.StderrTruncated)

	res, err = inst.Run(ctx, sandbox.Command{Argv: []string{"sleep", "10"}, Timeout: time.Second})
	require.NoError(t, err)
	require.True(t, res.TimedOut)
	require.Equal(t, -1, res.ExitCode)

	data := []byte("bin\x00ary\xfe")
	require.NoError(t, inst.WriteFile(ctx, "d/e/f.bin", data))
	uploads = fake.rec.find(http.MethodPost, "/v1/devboxes/dbx_1/upload_file")
	require.Contains(t, string(uploads[len(uploads)-1].Body), filepath.Join(home, "d/e/f.bin"))
	f, err := inst.ReadFile(ctx, "d/e/f.bin", 0)
	require.NoError(t, err)
	require.Equal(t, sandbox.File{Data: data, Size: int64(len(data))}, f)
	f, err = inst.ReadFile(ctx, "d/e/f.bin", 3)
	require.NoError(t, err)
	require.Equal(t, sandbox.File{Data: data[:3], Size: int64(len(data)), Truncated: true}, f)
	_, err = inst.ReadFile(ctx, "missing", 0)
	require.ErrorIs(t, err, sandbox.ErrNotFound)

	es, err := inst.List(ctx, "")
	require.NoError(t, err)
	var names []string
	for _, e := range es {
		names = append(names, e.Name)
	}
	require.Equal(t, []string{"a b", "d"}, names)
	require.True(t, es[0].Dir)
	es, err = inst.List(ctx, "d/e")
	require.NoError(t, err)
	require.Len(t, es, 1)
	require.Equal(t, "f.bin", es[0].Name)
	require.False(t, es[0].Dir)
	require.Equal(t, int64(len(data)), es[0].Size)
	require.WithinDuration(t, time.Now(), es[0].MTime, time.Minute)
	_, err = inst.List(ctx, "nope")
	require.ErrorIs(t, err, sandbox.ErrNotFound)
	_, err = inst.List(ctx, "/etc")
	require.ErrorIs(t, err, sandbox.ErrPath)
}

func TestRunloopErrorsAreSanitised(t *testing.T) {
	t.Parallel()
	_, d, spec := runloopSetupTest(t, `{}`)
	spec.Credential = json.RawMessage(`{"api_key":"rl_secret_wrong"}`)
	_, err := d.Create(t.Context(), spec)
	require.EqualError(t, err, "envhosted: runloop: create devbox: HTTP 401: the vendor refused the credential")
}
