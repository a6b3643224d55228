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

func flySetupTest(t *testing.T) (*fakeFly, *FlyMachines, sandbox.Spec) {
	t.Helper()
	fake := newFakeFly(t)
	srv, client := plainServer(t, fake)
	d := NewFlyMachines(client)
	d.poll = 10 * time.Millisecond
	spec := sandbox.Spec{
		EnvironmentID: "env_01jtest", WorkspaceID: "ws_01jtest",
		Provider:   json.RawMessage(`{"app_name":"` + fake.app + `","base_url":"` + srv.URL + `","region":"ams"}`),
		Credential: json.RawMessage(`{"api_token":"` + fake.token + `"}`),
		Template:   json.RawMessage(`{"image":"ubuntu:24.04","cpus":2,"memory_mb":1024,"timeout_seconds":7200}`),
	}
	return fake, d, spec
}

func TestFlyLifecycle(t *testing.T) {
	t.Parallel()
	fake, d, spec := flySetupTest(t)
	ctx := t.Context()

	h, err := d.Create(ctx, spec)
	require.NoError(t, err)
	creates := fake.rec.find(http.MethodPost, "/v1/apps/svc-sandboxes/machines")
	require.Len(t, creates, 1)
	require.Equal(t, fake.token, creates[0].Header.Get("Authorization"), "FlyV1 tokens are sent as they are")
	require.JSONEq(t, `{"name":"env-01jtest","region":"ams","config":{
		"image":"ubuntu:24.04","guest":{"cpu_kind":"shared","cpus":2,"memory_mb":1024},
		"init":{"exec":["/bin/sh","-c","exec sleep 7200"]},"restart":{"policy":"no"},
		"metadata":{"svc_environment_id":"env_01jtest","svc_workspace_id":"ws_01jtest"}}}`, string(creates[0].Body))
	var fh flyHandle
	require.NoError(t, json.Unmarshal(h, &fh))
	require.Equal(t, "e7841", fh.MachineID)
	require.Equal(t, fake.app, fh.AppName)
	require.Equal(t, fake.machines["e7841"].home, fh.Workdir)
	require.WithinDuration(t, time.Now().Add(2*time.Hour), fh.ExpiresAt, 5*time.Second)

	require.NoError(t, d.Stop(ctx, spec, h))
	require.NoError(t, d.Stop(ctx, spec, h), "stopping a stopped machine succeeds")
	inst, err := d.Open(ctx, spec, h)
	require.NoError(t, err)
	require.Len(t, fake.rec.find(http.MethodPost, "/v1/apps/svc-sandboxes/machines/e7841/start"), 1)
	res, err := inst.Run(ctx, sandbox.Command{Argv: []string{"true"}})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)

	require.ErrorIs(t, d.Renew(ctx, spec, h), sandbox.ErrUnsupported)
	require.NoError(t, d.Destroy(ctx, spec, h))
	deletes := fake.rec.find(http.MethodDelete, "/v1/apps/svc-sandboxes/machines/e7841")
	require.Equal(t, "force=true", deletes[0].Query)
	require.NoError(t, d.Destroy(ctx, spec, h))
	_, err = d.Open(ctx, spec, h)
	require.ErrorIs(t, err, sandbox.ErrGone)

	spec.Credential = json.RawMessage(`{"api_token":"plain-token-secret"}`)
	_, err = d.Create(ctx, spec)
	require.EqualError(t, err, "envhosted: fly_machines: create machine: HTTP 401: the vendor refused the credential")
	all := fake.rec.all()
	require.Equal(t, "Bearer plain-token-secret", all[len(all)-1].Header.Get("Authorization"))
}

func TestFlyCommandsAndFiles(t *testing.T) {
	t.Parallel()
	fake, d, spec := flySetupTest(t)
	ctx := t.Context()
	h, err := d.Create(ctx, spec)
	require.NoError(t, err)
	inst, err := d.Open(ctx, spec, h)
	require.NoError(t, err)
	home := fake.machines["e7841"].home

	res, err := inst.Run(ctx, sandbox.Command{Argv: []string{"sh", "-c", "echo out; echo err >&2; exit 6"}})
	require.NoError(t, err)
	require.Equal(t, 6, res.ExitCode)
	require.Equal(t, "out\n", string(res.Stdout))
	require.Equal(t, "err\n", string(res.Stderr))

	require.NoError(t, inst.WriteFile(ctx, "w d/x", []byte("x")))
	res, err = inst.Run(ctx, sandbox.Command{
		Argv: []string{"sh", "-c", `printf '%s|%s|' "$V" "$0"; pwd`, `it's "q" $(x)`},
		Env:  map[string]string{"V": "a'b"}, Dir: "w d",
	})
	require.NoError(t, err)
	require.Equal(t, `a'b|it's "q" $(x)|`+filepath.Join(home, "w d")+"\n", string(res.Stdout))

	res, err = inst.Run(ctx, sandbox.Command{Argv: []string{"wc", "-c"}, Stdin: []byte("1234567")})
	require.NoError(t, err)
	require.Equal(t, "7", strings.TrimSpace(string(res.Stdout)))

	res, err = inst.Run(ctx, sandbox.Command{Argv: []string{"sleep", "10"}, Timeout: time.Second})
	require.NoError(t, err)
	require.True(t, res.TimedOut)
	require.Equal(t, -1, res.ExitCode)

	// A file larger than one exec call's chunk goes in several.
	data := make([]byte, 200<<10)
	for i := range data {
		data[i] = byte(i * 7)
	}
	before := len(fake.rec.find(http.MethodPost, "/v1/apps/svc-sandboxes/machines/e7841/exec"))
	require.NoError(t, inst.WriteFile(ctx, "big/file.bin", data))
	require.Equal(t, 4, len(fake.rec.find(http.MethodPost, "/v1/apps/svc-sandboxes/machines/e7841/exec"))-before, "three chunks and a rename")
	onDisk, err := readHostFile(filepath.Join(home, "big/file.bin"))
	require.NoError(t, err)
	require.Equal(t, data, onDisk)

	f, err := inst.ReadFile(ctx, "big/file.bin", 0)
	require.NoError(t, err)
	require.Equal(t, sandbox.File{Data: data, Size: int64(len(data))}, f)
	f, err = inst.ReadFile(ctx, "big/file.bin", 10)
	require.NoError(t, err)
	require.Equal(t, sandbox.File{Data: data[:10], Size: int64(len(data)), Truncated: true}, f)
	_, err = inst.ReadFile(ctx, "nope", 0)
	require.ErrorIs(t, err, sandbox.ErrNotFound)
	require.NoError(t, inst.WriteFile(ctx, "empty", nil))
	f, err = inst.ReadFile(ctx, "empty", 0)
	require.NoError(t, err)
	require.Equal(t, sandbox.File{Data: []byte{}, Size: 0}, f)

	es, err := inst.List(ctx, "")
	require.NoError(t, err)
	var names []string
	for _, e := range es {
		names = append(names, e.Name)
	}
	require.Equal(t, []string{"big", "empty", "w d"}, names)
	es, err = inst.List(ctx, "big")
	require.NoError(t, err)
	require.Equal(t, []sandbox.Entry{{Name: "file.bin", Size: int64(len(data)), MTime: es[0].MTime}}, es)
	_, err = inst.List(ctx, "nope")
	require.ErrorIs(t, err, sandbox.ErrNotFound)
	_, err = inst.List(ctx, "..")
	require.ErrorIs(t, err, sandbox.ErrPath)
}
