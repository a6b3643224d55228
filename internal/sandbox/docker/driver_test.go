package docker

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/sandbox"
)

// testClock is a settable clock.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type testBundle struct {
	engine *fakeEngine
	driver *Driver
	spec   sandbox.Spec
	clock  *testClock
}

const defaultTemplate = `{"image":"alpine:3.21","cpu":1.5,"memory_mb":512,"user":"1000:1000","timeout_seconds":600}`

func setup(t *testing.T) *testBundle {
	t.Helper()
	eng := startFakeEngine(t)
	clock := &testClock{now: time.Now().UTC()}
	d := New(&endpoint.Policy{AllowedSockets: []string{eng.Socket}}, Options{Now: clock.Now, CallTimeout: 5 * time.Second})
	return &testBundle{engine: eng, driver: d, clock: clock, spec: sandbox.Spec{
		EnvironmentID: id.New(id.Environment),
		WorkspaceID:   id.New(id.Workspace),
		Provider:      json.RawMessage(`{"host":"unix://` + eng.Socket + `"}`),
		Template:      json.RawMessage(defaultTemplate),
	}}
}

// open creates an instance and opens it, closing it after the test.
func (b *testBundle) open(t *testing.T) (*Instance, sandbox.Handle) {
	t.Helper()
	h, err := b.driver.Create(t.Context(), b.spec)
	require.NoError(t, err)
	inst, err := b.driver.Open(t.Context(), b.spec, h)
	require.NoError(t, err)
	t.Cleanup(func() { _ = inst.Close() })
	return inst.(*Instance), h
}

func decode(t *testing.T, h sandbox.Handle) handle {
	t.Helper()
	got, err := decodeHandle(h)
	require.NoError(t, err)
	return got
}

func TestCreatePullsTheImageAndStartsALimitedContainer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h, err := b.driver.Create(t.Context(), b.spec)
	require.NoError(t, err)
	require.Equal(t, []string{
		"GET /_ping", "GET /images/alpine:3.21/json", "POST /images/create",
		"POST /containers/create", "POST /containers/" + decode(t, h).ContainerID + "/start",
	}, b.engine.Requests())
	raw := b.engine.RawRequests()
	require.Equal(t, "GET /_ping", raw[0], "the version is negotiated with an unversioned ping")
	require.Equal(t, "POST /v1.47/images/create?fromImage=alpine&tag=3.21", raw[2])
	require.Equal(t, "POST /v1.47/containers/create?name=svc-"+b.spec.EnvironmentID, raw[3])

	got := decode(t, h)
	require.Equal(t, "1.47", got.APIVersion)
	require.WithinDuration(t, b.clock.Now().Add(600*time.Second), got.ExpiresAt, time.Second)
	c := b.engine.container(got.ContainerID)
	require.NotNil(t, c)
	require.Equal(t, "running", c.status)
	cfg := c.config
	require.Equal(t, "alpine:3.21", cfg.Image)
	require.Equal(t, map[string]string{
		LabelEnvironment: b.spec.EnvironmentID, LabelWorkspace: b.spec.WorkspaceID,
		LabelExpiresAt: got.ExpiresAt.Format(time.RFC3339),
	}, cfg.Labels)
	require.Equal(t, []string{"/bin/sh"}, cfg.Entrypoint, "the image's entrypoint is overridden")
	require.Empty(t, cfg.Cmd, "the image's command is overridden")
	require.True(t, cfg.OpenStdin, "the shell waits on an open standard input")
	require.Equal(t, DefaultWorkdir, cfg.WorkingDir)
	require.Equal(t, "1000:1000", cfg.User)
	require.EqualValues(t, 1_500_000_000, cfg.HostConfig.NanoCpus)
	require.EqualValues(t, 512<<20, cfg.HostConfig.Memory)
	require.Equal(t, "none", cfg.HostConfig.NetworkMode, "no network unless the provider names one")
	require.Equal(t, []string{"no-new-privileges"}, cfg.HostConfig.SecurityOpt, "a set-uid program cannot make the user root")
	require.True(t, cfg.HostConfig.Init)

	// Create again (a worker died before checkpointing): the same container,
	// started, with the deadline set the first time; the image is not pulled again.
	b.clock.Add(time.Minute)
	h2, err := b.driver.Create(t.Context(), b.spec)
	require.NoError(t, err)
	require.Equal(t, got, decode(t, h2))
	require.Equal(t, 1, strings.Count(strings.Join(b.engine.Requests(), "\n"), "POST /images/create"))
}

func TestCreateUsesTheConfiguredNetworkVersionAndWorkdir(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.driver.guard.Networks = []string{"agents"}
	b.spec.Provider = json.RawMessage(`{"host":"unix://` + b.engine.Socket + `","api_version":"1.44","network":"agents"}`)
	b.spec.Template = json.RawMessage(`{"image":"ghcr.io/acme/tools:1.2","workdir":"/home/agent/work"}`)
	inst, h := b.open(t)
	require.Equal(t, "1.44", decode(t, h).APIVersion)
	for _, r := range b.engine.RawRequests() {
		require.True(t, strings.HasPrefix(r, "GET /v1.44/") || strings.HasPrefix(r, "POST /v1.44/"), "unpinned request %s", r)
	}
	require.Contains(t, b.engine.RawRequests(), "POST /v1.44/images/create?fromImage=ghcr.io%2Facme%2Ftools&tag=1.2")
	cfg := b.engine.container(inst.ContainerID()).config
	require.Equal(t, "agents", cfg.HostConfig.NetworkMode)
	require.Zero(t, cfg.HostConfig.NanoCpus, "no CPU limit unless the template sets one")
	require.Zero(t, cfg.HostConfig.Memory)
	require.Equal(t, "/home/agent/work", inst.Workdir())
}

func TestCreateReportsPullFailures(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.spec.Template = json.RawMessage(`{"image":"acme/private"}`)
	_, err := b.driver.Create(t.Context(), b.spec)
	require.EqualError(t, err, "envdocker: pull image: pull access denied for acme/private, repository does not exist or may require 'docker login': denied: requested access to the resource is denied")
	require.Contains(t, b.engine.RawRequests(), "POST /v1.47/images/create?fromImage=acme%2Fprivate&tag=latest", "no tag means latest, not every tag")

	b.engine.pullErrors["python:3.13-slim"] = "write /var/lib/docker/tmp/GetImageBlob: no space left on device"
	b.spec.Template = json.RawMessage(`{"image":"python:3.13-slim"}`)
	_, err = b.driver.Create(t.Context(), b.spec)
	require.EqualError(t, err, "envdocker: pull image: write /var/lib/docker/tmp/GetImageBlob: no space left on device")
	require.NotContains(t, strings.Join(b.engine.Requests(), " "), "POST /containers/create", "nothing is created without the image")
}

func TestTheSocketMustBeAllowedByThePolicy(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := New(&endpoint.Policy{}, Options{})
	_, err := d.Create(t.Context(), b.spec)
	require.ErrorIs(t, err, endpoint.ErrRefused)
	require.NotContains(t, err.Error(), b.engine.Socket)
	// The default address is refused too unless allowed.
	b.spec.Provider = json.RawMessage(`{}`)
	_, err = d.Create(t.Context(), b.spec)
	require.ErrorIs(t, err, endpoint.ErrRefused)
	require.Empty(t, b.engine.Requests(), "a refused socket is never dialled")
}

func TestStopOpenDestroy(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inst, h := b.open(t)
	ctx := t.Context()
	require.NoError(t, inst.WriteFile(ctx, "notes.txt", []byte("kept")))

	require.NoError(t, b.driver.Stop(ctx, b.spec, h))
	require.Equal(t, "exited", b.engine.container(inst.ContainerID()).status)
	require.Contains(t, b.engine.RawRequests(), "POST /v1.47/containers/"+inst.ContainerID()+"/stop?t=10")
	require.NoError(t, b.driver.Stop(ctx, b.spec, h), "stopping a stopped instance succeeds")
	_, err := inst.Run(ctx, sandbox.Command{Argv: []string{"true"}})
	require.Error(t, err, "a stopped container runs nothing")

	// Open starts it again, files kept.
	again, err := b.driver.Open(ctx, b.spec, h)
	require.NoError(t, err)
	defer again.Close()
	require.Equal(t, "running", b.engine.container(inst.ContainerID()).status)
	f, err := again.ReadFile(ctx, "notes.txt", 0)
	require.NoError(t, err)
	require.Equal(t, "kept", string(f.Data))

	require.NoError(t, b.driver.Destroy(ctx, b.spec, h))
	require.Nil(t, b.engine.container(inst.ContainerID()))
	require.Contains(t, b.engine.RawRequests(), "DELETE /v1.47/containers/"+inst.ContainerID()+"?force=1&v=1")
	require.NoError(t, b.driver.Destroy(ctx, b.spec, h), "destroying a destroyed instance succeeds")

	_, err = b.driver.Open(ctx, b.spec, h)
	require.ErrorIs(t, err, sandbox.ErrGone)
	require.ErrorIs(t, b.driver.Stop(ctx, b.spec, h), sandbox.ErrGone)
	_, err = again.Run(ctx, sandbox.Command{Argv: []string{"true"}})
	require.ErrorIs(t, err, sandbox.ErrGone)
	_, err = again.ReadFile(ctx, "notes.txt", 0)
	require.ErrorIs(t, err, sandbox.ErrGone)
	_, err = again.List(ctx, "")
	require.ErrorIs(t, err, sandbox.ErrGone)
}

func TestAnExpiredInstanceIsGone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inst, h := b.open(t)
	ctx := t.Context()
	b.clock.Add(600 * time.Second)

	_, err := inst.Run(ctx, sandbox.Command{Argv: []string{"true"}})
	require.ErrorIs(t, err, sandbox.ErrGone)
	require.ErrorIs(t, inst.WriteFile(ctx, "a", nil), sandbox.ErrGone)

	_, err = b.driver.Open(ctx, b.spec, h)
	require.ErrorIs(t, err, sandbox.ErrGone)
	require.Nil(t, b.engine.container(inst.ContainerID()), "Open destroys an expired instance")
}

func TestRunIsCappedAtTheRemainingLifetime(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inst, _ := b.open(t)
	b.clock.Add(inst.ExpiresAt().Sub(b.clock.Now()) - 300*time.Millisecond)
	start := time.Now()
	res, err := inst.Run(t.Context(), sandbox.Command{Argv: []string{"sleep", "10"}, Timeout: time.Minute})
	require.NoError(t, err)
	require.True(t, res.TimedOut)
	require.Less(t, time.Since(start), 10*time.Second, "the kill scans the processes; the stand-in sees all of this machine's")
}

func TestOpenRefusesAnotherEnvironmentsContainer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, h := b.open(t)
	other := b.spec
	other.EnvironmentID = id.New(id.Environment)
	_, err := b.driver.Open(t.Context(), other, h)
	require.ErrorIs(t, err, sandbox.ErrGone)

	// A container of that name that svc did not make is not adopted.
	b.engine.mu.Lock()
	b.engine.names["svc-"+other.EnvironmentID] = decode(t, h).ContainerID
	b.engine.mu.Unlock()
	_, err = b.driver.Create(t.Context(), other)
	require.ErrorContains(t, err, "that svc did not make for this environment")
}

func TestRenewIsUnsupported(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, h := b.open(t)
	require.ErrorIs(t, b.driver.Renew(t.Context(), b.spec, h), sandbox.ErrUnsupported)
}

func TestInvalidInputsAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	for name, mutate := range map[string]func(*sandbox.Spec){
		"BadID":           func(s *sandbox.Spec) { s.EnvironmentID = "env_../../x" },
		"UpperID":         func(s *sandbox.Spec) { s.EnvironmentID = strings.ToUpper(s.EnvironmentID) },
		"NoImage":         func(s *sandbox.Spec) { s.Template = json.RawMessage(`{"cpu":1}`) },
		"ImageWithQuery":  func(s *sandbox.Spec) { s.Template = json.RawMessage(`{"image":"alpine?x=1"}`) },
		"UnknownField":    func(s *sandbox.Spec) { s.Template = json.RawMessage(`{"image":"alpine","privileged":true}`) },
		"TinyCPU":         func(s *sandbox.Spec) { s.Template = json.RawMessage(`{"image":"alpine","cpu":0.01}`) },
		"RelativeWorkdir": func(s *sandbox.Spec) { s.Template = json.RawMessage(`{"image":"alpine","workdir":"work"}`) },
		"RootWorkdir":     func(s *sandbox.Spec) { s.Template = json.RawMessage(`{"image":"alpine","workdir":"/"}`) },
		"LongLifetime":    func(s *sandbox.Spec) { s.Template = json.RawMessage(`{"image":"alpine","timeout_seconds":604801}`) },
		"BadVersion":      func(s *sandbox.Spec) { s.Provider = json.RawMessage(`{"api_version":"2.0"}`) },
		"BadCredential":   func(s *sandbox.Spec) { s.Credential = json.RawMessage(`{"tls_ca":"not pem"}`) },
	} {
		spec := b.spec
		mutate(&spec)
		_, err := b.driver.Create(ctx, spec)
		require.ErrorIs(t, err, ErrInvalidConfig, name)
	}
	for _, h := range []string{`{}`, `{"container_id":"../x"}`, `[]`, `{"container_id":"0123456789ab","api_version":"x"}`} {
		_, err := b.driver.Open(ctx, b.spec, sandbox.Handle(h))
		require.ErrorIs(t, err, ErrInvalidConfig, h)
		require.ErrorIs(t, b.driver.Destroy(ctx, b.spec, sandbox.Handle(h)), ErrInvalidConfig, h)
	}
	require.Empty(t, b.engine.Requests())
}

func TestEngineErrorsAreShortAndNamed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inst, _ := b.open(t)
	// The engine's message is kept, cleaned and shortened; the URL is not.
	b.engine.mu.Lock()
	b.engine.containers[inst.ContainerID()].status = "exited"
	b.engine.mu.Unlock()
	_, err := inst.Run(t.Context(), sandbox.Command{Argv: []string{"true"}})
	require.EqualError(t, err, "envdocker: create exec: engine answered HTTP 409: container "+inst.ContainerID()+" is not running")
	require.False(t, errors.Is(err, sandbox.ErrGone))

	long := &Error{Op: "x", Message: clean(strings.Repeat("é", 400) + "\n")}
	require.LessOrEqual(t, len(long.Message), maxMessage+3)
	require.True(t, strings.HasSuffix(long.Message, "..."))
	require.NotContains(t, clean("a\nb\x00c"), "\n")
}

func TestCreateIsCancelledWithItsContext(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := b.driver.Create(ctx, b.spec)
	require.ErrorIs(t, err, context.Canceled)
}
