package hosted

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/sandbox"
)

func e2bSetupTest(t *testing.T) (*fakeE2B, *E2B, sandbox.Spec) {
	t.Helper()
	fake := newFakeE2B(t)
	srv, client := tlsServer(t, fake, "e2b.test")
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	fake.domain = "e2b.test:" + port
	spec := sandbox.Spec{
		EnvironmentID: "env_01jtest", WorkspaceID: "ws_01jtest",
		Provider:   json.RawMessage(`{"api_url":"https://api.e2b.test:` + port + `"}`),
		Credential: json.RawMessage(`{"api_key":"` + fake.key + `"}`),
		Template:   json.RawMessage(`{"template":"base","timeout_seconds":600}`),
	}
	return fake, NewE2B(client), spec
}

func TestE2BLifecycle(t *testing.T) {
	t.Parallel()
	fake, d, spec := e2bSetupTest(t)
	ctx := t.Context()

	h, err := d.Create(ctx, spec)
	require.NoError(t, err)
	creates := fake.rec.find(http.MethodPost, "/sandboxes")
	require.Len(t, creates, 1)
	require.Equal(t, fake.key, creates[0].Header.Get("X-API-KEY"))
	var body map[string]any
	require.NoError(t, json.Unmarshal(creates[0].Body, &body))
	require.Equal(t, "base", body["templateID"])
	require.EqualValues(t, 600, body["timeout"])
	require.Equal(t, true, body["secure"])
	require.Equal(t, map[string]any{"svc_environment_id": "env_01jtest", "svc_workspace_id": "ws_01jtest"}, body["metadata"])

	var eh e2bHandle
	require.NoError(t, json.Unmarshal(h, &eh))
	require.Equal(t, "sbx1", eh.SandboxID)
	require.Equal(t, fake.domain, eh.Domain)
	require.Equal(t, "envd-token-sbx1", eh.AccessToken)
	require.WithinDuration(t, time.Now().Add(600*time.Second), eh.ExpiresAt, 5*time.Second)

	inst, err := d.Open(ctx, spec, h)
	require.NoError(t, err)
	defer inst.Close()
	require.Len(t, fake.rec.find(http.MethodPost, "/sandboxes/sbx1/connect"), 1)

	// Pausing twice succeeds; Open resumes.
	require.NoError(t, d.Stop(ctx, spec, h))
	require.NoError(t, d.Stop(ctx, spec, h))
	require.Len(t, fake.rec.find(http.MethodPost, "/sandboxes/sbx1/pause"), 2)
	_, err = inst.Run(ctx, sandbox.Command{Argv: []string{"true"}})
	require.Error(t, err, "a paused sandbox's envd does not answer")
	inst, err = d.Open(ctx, spec, h)
	require.NoError(t, err)
	res, err := inst.Run(ctx, sandbox.Command{Argv: []string{"true"}})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)

	require.NoError(t, d.Renew(ctx, spec, h))
	renews := fake.rec.find(http.MethodPost, "/sandboxes/sbx1/timeout")
	require.Len(t, renews, 1)
	require.JSONEq(t, `{"timeout":600}`, string(renews[0].Body))

	require.NoError(t, d.Destroy(ctx, spec, h))
	require.NoError(t, d.Destroy(ctx, spec, h), "destroying a gone sandbox counts as done")
	require.Len(t, fake.rec.find(http.MethodDelete, "/sandboxes/sbx1"), 2)
	_, err = d.Open(ctx, spec, h)
	require.ErrorIs(t, err, sandbox.ErrGone)
	require.ErrorIs(t, d.Renew(ctx, spec, h), sandbox.ErrGone)
}

func TestE2BCommands(t *testing.T) {
	t.Parallel()
	fake, d, spec := e2bSetupTest(t)
	ctx := t.Context()
	h, err := d.Create(ctx, spec)
	require.NoError(t, err)
	inst, err := d.Open(ctx, spec, h)
	require.NoError(t, err)
	t.Cleanup(func() { _ = inst.Close() })
	require.NoError(t, inst.WriteFile(ctx, "sub/keep", nil))

	t.Run("exit code and streams", func(t *testing.T) {
		res, err := inst.Run(ctx, sandbox.Command{Argv: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}})
		require.NoError(t, err)
		require.Equal(t, 3, res.ExitCode)
		require.Equal(t, "out\n", string(res.Stdout))
		require.Equal(t, "err\n", string(res.Stderr))
		require.False(t, res.TimedOut)
	})
	t.Run("argv without a shell, env and dir", func(t *testing.T) {
		res, err := inst.Run(ctx, sandbox.Command{
			Argv: []string{"sh", "-c", `printf '%s|%s|' "$GREETING" "$1"; pwd`, "x", "it's $HOME"},
			Env:  map[string]string{"GREETING": "hello world"}, Dir: "sub",
		})
		require.NoError(t, err)
		require.Equal(t, "hello world|it's $HOME|"+fake.sandboxes["sbx1"].host("/home/user/sub")+"\n", string(res.Stdout))
		starts := fake.rec.find(http.MethodPost, "/process.Process/Start")
		last := starts[len(starts)-1]
		require.Equal(t, "envd-token-sbx1", last.Header.Get("X-Access-Token"))
		require.Equal(t, "application/connect+json", last.Header.Get("Content-Type"))
		require.Contains(t, string(last.Body), `"cwd":"/home/user/sub"`)
	})
	t.Run("stdin", func(t *testing.T) {
		res, err := inst.Run(ctx, sandbox.Command{Argv: []string{"wc", "-c"}, Stdin: []byte(strings.Repeat("z", 100000))})
		require.NoError(t, err)
		require.Equal(t, "100000", strings.TrimSpace(string(res.Stdout)))
		require.Len(t, fake.rec.find(http.MethodPost, "/process.Process/CloseStdin"), 1)
		require.Len(t, fake.rec.find(http.MethodPost, "/process.Process/SendInput"), 2, "64 KiB chunks")
	})
	t.Run("output limit", func(t *testing.T) {
		res, err := inst.Run(ctx, sandbox.Command{Argv: []string{"sh", "-c", "head -c 50000 /dev/zero; echo e >&2"}, OutputLimit: 100})
		require.NoError(t, err)
		require.Len(t, res.Stdout, 100)
		require.True(t, res.StdoutTruncated)
		require.False(t, res.StderrTruncated)
	})
	t.Run("time-out kills", func(t *testing.T) {
		start := time.Now()
		res, err := inst.Run(ctx, sandbox.Command{Argv: []string{"sh", "-c", "echo started; exec sleep 30"}, Timeout: 500 * time.Millisecond})
		require.NoError(t, err)
		require.True(t, res.TimedOut)
		require.Equal(t, -1, res.ExitCode)
		require.Equal(t, "started\n", string(res.Stdout))
		require.Less(t, time.Since(start), 10*time.Second)
		kills := fake.rec.find(http.MethodPost, "/process.Process/SendSignal")
		require.Len(t, kills, 1)
		require.Contains(t, string(kills[0].Body), `"signal":"SIGNAL_SIGKILL"`)
	})
	t.Run("invalid commands", func(t *testing.T) {
		_, err := inst.Run(ctx, sandbox.Command{})
		require.ErrorIs(t, err, ErrInvalidCommand)
		_, err = inst.Run(ctx, sandbox.Command{Argv: []string{"true"}, Dir: "../etc"})
		require.ErrorIs(t, err, sandbox.ErrPath)
		_, err = inst.Run(ctx, sandbox.Command{Argv: []string{"true"}, Env: map[string]string{"A=B": "c"}})
		require.ErrorIs(t, err, ErrInvalidCommand)
	})
}

func TestE2BFiles(t *testing.T) {
	t.Parallel()
	fake, d, spec := e2bSetupTest(t)
	ctx := t.Context()
	h, err := d.Create(ctx, spec)
	require.NoError(t, err)
	inst, err := d.Open(ctx, spec, h)
	require.NoError(t, err)

	data := []byte("line one\x00binary\xff")
	require.NoError(t, inst.WriteFile(ctx, "dir/a.bin", data))
	onDisk, err := readHostFile(fake.sandboxes["sbx1"].host("/home/user/dir/a.bin"))
	require.NoError(t, err)
	require.Equal(t, data, onDisk)

	f, err := inst.ReadFile(ctx, "dir/a.bin", 0)
	require.NoError(t, err)
	require.Equal(t, sandbox.File{Data: data, Size: int64(len(data))}, f)
	f, err = inst.ReadFile(ctx, "dir/a.bin", 4)
	require.NoError(t, err)
	require.Equal(t, sandbox.File{Data: data[:4], Size: int64(len(data)), Truncated: true}, f)
	reads := fake.rec.find(http.MethodGet, "/files")
	require.Contains(t, reads[0].Query, "path=%2Fhome%2Fuser%2Fdir%2Fa.bin")

	_, err = inst.ReadFile(ctx, "missing", 0)
	require.ErrorIs(t, err, sandbox.ErrNotFound)

	es, err := inst.List(ctx, "")
	require.NoError(t, err)
	require.Len(t, es, 1)
	require.Equal(t, "dir", es[0].Name)
	require.True(t, es[0].Dir)
	es, err = inst.List(ctx, "dir")
	require.NoError(t, err)
	require.Len(t, es, 1)
	require.Equal(t, sandbox.Entry{Name: "a.bin", Size: int64(len(data)), MTime: es[0].MTime}, es[0])
	require.WithinDuration(t, time.Now(), es[0].MTime, time.Minute)
	_, err = inst.List(ctx, "nope")
	require.ErrorIs(t, err, sandbox.ErrNotFound)

	for _, bad := range []string{"/etc/passwd", "../x", "a/../../x", "a\x00b"} {
		_, err := inst.ReadFile(ctx, bad, 0)
		require.ErrorIs(t, err, sandbox.ErrPath, bad)
		require.ErrorIs(t, inst.WriteFile(ctx, bad, nil), sandbox.ErrPath, bad)
		_, err = inst.List(ctx, bad)
		require.ErrorIs(t, err, sandbox.ErrPath, bad)
	}
	require.ErrorIs(t, inst.WriteFile(ctx, "big", make([]byte, sandbox.MaxWriteBytes+1)), ErrTooLarge)
}

func TestE2BErrorsAreSanitised(t *testing.T) {
	t.Parallel()
	_, d, spec := e2bSetupTest(t)
	spec.Credential = json.RawMessage(`{"api_key":"e2b_wrong_secret_key"}`)
	_, err := d.Create(t.Context(), spec)
	require.Error(t, err)
	require.Equal(t, "envhosted: e2b: create sandbox: HTTP 401: the vendor refused the credential", err.Error())
	require.NotContains(t, err.Error(), "e2b_wrong_secret_key")
	require.NotContains(t, err.Error(), "Invalid API key")

	// A call the endpoint policy refuses says so without the address.
	spec.Provider = json.RawMessage(`{"api_url":"https://10.0.0.1"}`)
	_, err = NewE2B(d.client).Create(t.Context(), spec)
	require.Error(t, err)
	require.NotContains(t, err.Error(), "10.0.0.1")
}
