package hosted

import (
	"encoding/json"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/sandbox"
)

func modalSetupTest(t *testing.T, template string) (*fakeModal, *Modal, sandbox.Spec) {
	t.Helper()
	fake := newFakeModal(t)
	d := NewModal(policyFor(t, "http://"+fake.addr, nil), ModalOptions{Address: fake.addr, Plaintext: true})
	d.poll = 10 * time.Millisecond
	t.Cleanup(func() { _ = d.Close() })
	spec := sandbox.Spec{
		EnvironmentID: "env_01jtest", WorkspaceID: "ws_01jtest",
		Provider:   json.RawMessage(`{"environment":"dev","app_name":"agents"}`),
		Credential: json.RawMessage(`{"token_id":"` + fake.tokenID + `","token_secret":"` + fake.tokenSecret + `"}`),
		Template:   json.RawMessage(template),
	}
	return fake, d, spec
}

func TestModalLifecycle(t *testing.T) {
	t.Parallel()
	fake, d, spec := modalSetupTest(t, `{"image":"python:3.13-slim","cpu":0.5,"memory_mb":1024,"gpu":"a10g:2","region":"us-east","timeout_seconds":600}`)
	ctx := t.Context()

	h, err := d.Create(ctx, spec)
	require.NoError(t, err)
	var mh modalHandle
	require.NoError(t, json.Unmarshal(h, &mh))
	require.Equal(t, modalHandle{SandboxID: "sb-2", TaskID: "ta-2", Workdir: fake.box("sb-2").home}, mh)
	require.NotContains(t, string(h), fake.tokenSecret)

	apps := fake.find("AppGetOrCreate")
	require.Len(t, apps, 1)
	require.Equal(t, "agents", apps[0].Req.str(field(1)))
	require.Equal(t, "dev", apps[0].Req.str(field(2)))
	for _, c := range fake.calls {
		require.Equal(t, []string{fake.tokenID}, c.MD.Get("x-modal-token-id"), c.Method)
		require.Equal(t, []string{fake.tokenSecret}, c.MD.Get("x-modal-token-secret"), c.Method)
		require.Equal(t, []string{"9"}, c.MD.Get("x-modal-client-type"), c.Method)
		require.Equal(t, []string{"application/grpc+proto"}, c.MD.Get("content-type"), c.Method)
	}

	images := fake.find("ImageGetOrCreate")
	require.Len(t, images, 1)
	img, err := images[0].Req.sub(field(2))
	require.NoError(t, err)
	require.Equal(t, []string{"FROM python:3.13-slim"}, img.strs(field(6)))
	require.Equal(t, "ap-1", images[0].Req.str(field(4)))
	require.Equal(t, uint64(modalNamespaceWS), images[0].Req.uint(field(8)))
	require.Len(t, fake.find("ImageJoinStreaming"), 1, "the build is waited for")

	creates := fake.find("SandboxCreate")
	require.Len(t, creates, 1)
	require.Equal(t, "ap-1", creates[0].Req.str(field(1)))
	require.Equal(t, "dev", creates[0].Req.str(field(3)))
	def, err := creates[0].Req.sub(field(2))
	require.NoError(t, err)
	require.Equal(t, "im-1", def.str(field(3)))
	require.Equal(t, uint64(600), def.uint(field(7)))
	res, err := def.sub(field(5))
	require.NoError(t, err)
	require.Equal(t, uint64(1024), res.uint(field(2)))
	require.Equal(t, uint64(500), res.uint(field(3)))
	gpu, err := res.sub(field(4))
	require.NoError(t, err)
	require.Equal(t, uint64(2), gpu.uint(field(2)))
	require.Equal(t, "A10G", gpu.str(field(4)))
	place, err := def.sub(field(17))
	require.NoError(t, err)
	require.Equal(t, []string{"us-east"}, place.strs(field(4)))
	require.GreaterOrEqual(t, len(fake.find("SandboxGetTaskId")), 2, "the task is asked for until it is scheduled")

	require.ErrorIs(t, d.Stop(ctx, spec, h), sandbox.ErrUnsupported)
	require.ErrorIs(t, d.Renew(ctx, spec, h), sandbox.ErrUnsupported)

	inst, err := d.Open(ctx, spec, h)
	require.NoError(t, err)
	out, err := inst.Run(ctx, sandbox.Command{Argv: []string{"true"}})
	require.NoError(t, err)
	require.Equal(t, 0, out.ExitCode)

	// A second sandbox reuses the app and the built image.
	_, err = d.Create(ctx, spec)
	require.NoError(t, err)
	require.Len(t, fake.find("ImageJoinStreaming"), 1)
	require.Len(t, fake.apps, 1)

	require.NoError(t, d.Destroy(ctx, spec, h))
	require.True(t, fake.box("sb-2").terminated)
	require.NoError(t, d.Destroy(ctx, spec, h), "terminating a terminated sandbox succeeds")
	_, err = d.Open(ctx, spec, h)
	require.ErrorIs(t, err, sandbox.ErrGone)
	_, err = inst.Run(ctx, sandbox.Command{Argv: []string{"true"}})
	require.ErrorIs(t, err, sandbox.ErrGone, "an attached instance sees the end too")

	fake.mu.Lock()
	delete(fake.boxes, "sb-2")
	fake.mu.Unlock()
	require.NoError(t, d.Destroy(ctx, spec, h), "an unknown sandbox counts as destroyed")
	_, err = d.Open(ctx, spec, h)
	require.ErrorIs(t, err, sandbox.ErrGone)
}

func TestModalCommandsAndFiles(t *testing.T) {
	t.Parallel()
	fake, d, spec := modalSetupTest(t, `{"image":"alpine:3.21"}`)
	ctx := t.Context()
	h, err := d.Create(ctx, spec)
	require.NoError(t, err)
	def, err := fake.find("SandboxCreate")[0].Req.sub(field(2))
	require.NoError(t, err)
	require.Equal(t, uint64(modalDefaultTimeout), def.uint(field(7)))
	require.False(t, def.has(field(17)), "no region asked for")
	inst, err := d.Open(ctx, spec, h)
	require.NoError(t, err)
	home := fake.box("sb-2").home

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

	// Stdin is streamed in chunks and ended; a command without stdin sees its end at once.
	big := strings.Repeat("0123456789abcdef", modalStdinChunk/16*2+1)
	res, err = inst.Run(ctx, sandbox.Command{Argv: []string{"wc", "-c"}, Stdin: []byte(big)})
	require.NoError(t, err)
	require.Equal(t, "2097168", strings.TrimSpace(string(res.Stdout)))
	res, err = inst.Run(ctx, sandbox.Command{Argv: []string{"cat"}})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)
	require.Empty(t, res.Stdout)

	// Output past the limit is discarded; it came in several batches.
	res, err = inst.Run(ctx, sandbox.Command{Argv: []string{"sh", "-c", "head -c 3000 /dev/zero; head -c 3000 /dev/zero >&2"}, OutputLimit: 7})
	require.NoError(t, err)
	require.Len(t, res.Stdout, 7)
	require.Len(t, res.Stderr, 7)
	require.True(t, res.StdoutTruncated)
	require.True(t, res.StderrTruncated)
	res, err = inst.Run(ctx, sandbox.Command{Argv: []string{"sh", "-c", "head -c 2500 /dev/zero | tr '\\0' x"}})
	require.NoError(t, err)
	require.Equal(t, strings.Repeat("x", 2500), string(res.Stdout), "batches are joined in order")

	// A command outliving the long polls is waited for across them.
	res, err = inst.Run(ctx, sandbox.Command{Argv: []string{"sh", "-c", "sleep 0.5; echo late"}})
	require.NoError(t, err)
	require.Equal(t, "late\n", string(res.Stdout))

	res, err = inst.Run(ctx, sandbox.Command{Argv: []string{"sleep", "10"}, Timeout: time.Second})
	require.NoError(t, err)
	require.True(t, res.TimedOut)
	require.Equal(t, -1, res.ExitCode)

	data := []byte("bin\x00ary\xfe")
	require.NoError(t, inst.WriteFile(ctx, "d/e/f.bin", data))
	host, err := readHostFile(filepath.Join(home, "d/e/f.bin"))
	require.NoError(t, err)
	require.Equal(t, data, host)
	f, err := inst.ReadFile(ctx, "d/e/f.bin", 0)
	require.NoError(t, err)
	require.Equal(t, sandbox.File{Data: data, Size: int64(len(data))}, f)
	f, err = inst.ReadFile(ctx, "d/e/f.bin", 3)
	require.NoError(t, err)
	require.Equal(t, sandbox.File{Data: data[:3], Size: int64(len(data)), Truncated: true}, f)
	_, err = inst.ReadFile(ctx, "missing", 0)
	require.ErrorIs(t, err, sandbox.ErrNotFound)
	_, err = inst.ReadFile(ctx, "../etc/passwd", 0)
	require.ErrorIs(t, err, sandbox.ErrPath)
	require.ErrorIs(t, inst.WriteFile(ctx, "/tmp/x", data), sandbox.ErrPath)

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

func TestModalErrorsAreSanitised(t *testing.T) {
	t.Parallel()
	fake, d, spec := modalSetupTest(t, `{"image":"alpine:3.21"}`)
	spec.Credential = json.RawMessage(`{"token_id":"ak-wrong","token_secret":"as-wrongsecret"}`)
	_, err := d.Create(t.Context(), spec)
	require.EqualError(t, err, "envhosted: modal: get or create app: the vendor refused the credential (gRPC Unauthenticated)")
	require.NotContains(t, err.Error(), "as-wrongsecret")
	require.Empty(t, fake.find("SandboxCreate"))

	spec.Credential = json.RawMessage(`{"token_id":"ak-x","token_secret":"as-x\nInjected: y"}`)
	_, err = d.Create(t.Context(), spec)
	require.ErrorContains(t, err, "characters a header cannot carry")
	require.NotContains(t, err.Error(), "Injected")
}

func TestModalFailedImageBuild(t *testing.T) {
	t.Parallel()
	fake, d, spec := modalSetupTest(t, `{"image":"nope/missing:1"}`)
	fake.imageRefused = true
	_, err := d.Create(t.Context(), spec)
	require.ErrorContains(t, err, "envhosted: modal: build image: the image build failed")
	require.Empty(t, fake.find("SandboxCreate"))
}

func TestModalDialsThroughThePolicy(t *testing.T) {
	t.Parallel()
	fake, _, spec := modalSetupTest(t, `{"image":"alpine:3.21"}`)
	// Loopback is not opened: the guarded dialer refuses before any call.
	strict := &endpoint.Policy{AllowedPrefixes: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}}
	d := NewModal(strict, ModalOptions{Address: fake.addr, Plaintext: true})
	t.Cleanup(func() { _ = d.Close() })
	_, err := d.Create(t.Context(), spec)
	require.ErrorIs(t, err, endpoint.ErrRefused)
	require.NotContains(t, err.Error(), "127.0.0.1")
	require.Empty(t, fake.find("AppGetOrCreate"))
}
