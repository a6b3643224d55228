package hosted

import (
	"crypto/tls"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/sandbox"
)

func kubeSetupTest(t *testing.T) (*fakeKube, *Kubernetes, sandbox.Spec) {
	t.Helper()
	fake := newFakeKube(t)
	srv, client := plainServer(t, fake)
	d := NewKubernetes(client, nil)
	d.poll = 10 * time.Millisecond
	spec := sandbox.Spec{
		EnvironmentID: "env_01jtest", WorkspaceID: "ws_01jtest",
		Provider:   json.RawMessage(`{"api_server":"` + srv.URL + `","namespace":"` + fake.ns + `"}`),
		Credential: json.RawMessage(`{"token":"` + fake.token + `"}`),
		Template:   json.RawMessage(`{"image":"debian:12","cpu":0.5,"memory_mb":512,"runtime_class":"gvisor","timeout_seconds":1800}`),
	}
	return fake, d, spec
}

func TestKubernetesLifecycle(t *testing.T) {
	t.Parallel()
	fake, d, spec := kubeSetupTest(t)
	ctx := t.Context()

	h, err := d.Create(ctx, spec)
	require.NoError(t, err)
	creates := fake.rec.find(http.MethodPost, "/api/v1/namespaces/sandboxes/pods")
	require.Len(t, creates, 1)
	require.Equal(t, "Bearer "+fake.token, creates[0].Header.Get("Authorization"))
	require.JSONEq(t, `{"apiVersion":"v1","kind":"Pod",
		"metadata":{"name":"svc-env-01jtest","labels":{"app.kubernetes.io/managed-by":"svc","svc.dev/environment-id":"env_01jtest"}},
		"spec":{"restartPolicy":"Never","activeDeadlineSeconds":1800,"automountServiceAccountToken":false,"terminationGracePeriodSeconds":5,
			"runtimeClassName":"gvisor",
			"containers":[{"name":"sandbox","image":"debian:12","command":["/bin/sh","-c","exec sleep 1800"],
				"resources":{"requests":{"cpu":"500m","memory":"512Mi"},"limits":{"cpu":"500m","memory":"512Mi"}}}]}}`, string(creates[0].Body))
	var kh kubeHandle
	require.NoError(t, json.Unmarshal(h, &kh))
	require.Equal(t, "svc-env-01jtest", kh.Pod)
	require.Equal(t, "sandboxes", kh.Namespace)
	require.Equal(t, fake.pods["svc-env-01jtest"].home, kh.Workdir)
	require.WithinDuration(t, time.Now().Add(30*time.Minute), kh.ExpiresAt, 5*time.Second)

	// Creating again (a worker died before recording the handle) reuses the pod.
	h2, err := d.Create(ctx, spec)
	require.NoError(t, err)
	var kh2 kubeHandle
	require.NoError(t, json.Unmarshal(h2, &kh2))
	require.Equal(t, kh.Pod, kh2.Pod)

	inst, err := d.Open(ctx, spec, h)
	require.NoError(t, err)
	res, err := inst.Run(ctx, sandbox.Command{Argv: []string{"true"}})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)

	require.ErrorIs(t, d.Stop(ctx, spec, h), sandbox.ErrUnsupported)
	require.ErrorIs(t, d.Renew(ctx, spec, h), sandbox.ErrUnsupported)
	require.NoError(t, d.Destroy(ctx, spec, h))
	deletes := fake.rec.find(http.MethodDelete, "/api/v1/namespaces/sandboxes/pods/svc-env-01jtest")
	require.Equal(t, "gracePeriodSeconds=0", deletes[0].Query)
	require.NoError(t, d.Destroy(ctx, spec, h))
	_, err = d.Open(ctx, spec, h)
	require.ErrorIs(t, err, sandbox.ErrGone)
	_, err = inst.Run(ctx, sandbox.Command{Argv: []string{"true"}})
	require.ErrorIs(t, err, sandbox.ErrGone)

	spec.Credential = json.RawMessage(`{"token":"wrong-secret-token"}`)
	_, err = d.Create(ctx, spec)
	require.EqualError(t, err, "envhosted: kubernetes: create pod: HTTP 401: the vendor refused the credential")

	spec.Credential = json.RawMessage(`{"token":"t","ca_cert":"-----BEGIN CERTIFICATE-----"}`)
	_, err = d.Create(ctx, spec)
	require.ErrorContains(t, err, "cannot use a provider's own CA")
	withTLS := NewKubernetes(d.client, func(*tls.Config) *http.Client { return d.client })
	_, err = withTLS.Create(ctx, spec)
	require.ErrorContains(t, err, "holds no PEM certificate")
}

func TestKubernetesCommandsAndFiles(t *testing.T) {
	t.Parallel()
	fake, d, spec := kubeSetupTest(t)
	ctx := t.Context()
	h, err := d.Create(ctx, spec)
	require.NoError(t, err)
	inst, err := d.Open(ctx, spec, h)
	require.NoError(t, err)
	home := fake.pods["svc-env-01jtest"].home

	res, err := inst.Run(ctx, sandbox.Command{Argv: []string{"sh", "-c", "echo out; echo err >&2; exit 7"}})
	require.NoError(t, err)
	require.Equal(t, 7, res.ExitCode)
	require.Equal(t, "out\n", string(res.Stdout))
	require.Equal(t, "err\n", string(res.Stderr))

	require.NoError(t, inst.WriteFile(ctx, "s d/k", []byte("k")))
	res, err = inst.Run(ctx, sandbox.Command{
		Argv: []string{"sh", "-c", `printf '%s|%s|' "$V" "$0"; pwd`, `it's "q" $(x) &`},
		Env:  map[string]string{"V": "v'v"}, Dir: "s d",
	})
	require.NoError(t, err)
	require.Equal(t, `v'v|it's "q" $(x) &|`+filepath.Join(home, "s d")+"\n", string(res.Stdout))
	execs := fake.rec.find(http.MethodGet, "/api/v1/namespaces/sandboxes/pods/svc-env-01jtest/exec")
	require.Contains(t, execs[len(execs)-1].Query, "command=sh")

	in := []byte(strings.Repeat("0123456789", 10000))
	res, err = inst.Run(ctx, sandbox.Command{Argv: []string{"wc", "-c"}, Stdin: in})
	require.NoError(t, err)
	require.Equal(t, "100000", strings.TrimSpace(string(res.Stdout)))

	res, err = inst.Run(ctx, sandbox.Command{Argv: []string{"head", "-c", "100000", "/dev/zero"}, OutputLimit: 9})
	require.NoError(t, err)
	require.Len(t, res.Stdout, 9)
	require.True(t, res.StdoutTruncated)

	res, err = inst.Run(ctx, sandbox.Command{Argv: []string{"sleep", "10"}, Timeout: time.Second})
	require.NoError(t, err)
	require.True(t, res.TimedOut)
	require.Equal(t, -1, res.ExitCode)

	data := make([]byte, 300<<10)
	for i := range data {
		data[i] = byte(i * 13)
	}
	require.NoError(t, inst.WriteFile(ctx, "x/y/z.bin", data))
	onDisk, err := readHostFile(filepath.Join(home, "x/y/z.bin"))
	require.NoError(t, err)
	require.Equal(t, data, onDisk)
	f, err := inst.ReadFile(ctx, "x/y/z.bin", 0)
	require.NoError(t, err)
	require.Equal(t, sandbox.File{Data: data, Size: int64(len(data))}, f)
	f, err = inst.ReadFile(ctx, "x/y/z.bin", 5)
	require.NoError(t, err)
	require.Equal(t, sandbox.File{Data: data[:5], Size: int64(len(data)), Truncated: true}, f)
	_, err = inst.ReadFile(ctx, "missing", 0)
	require.ErrorIs(t, err, sandbox.ErrNotFound)

	es, err := inst.List(ctx, "x/y")
	require.NoError(t, err)
	require.Equal(t, []sandbox.Entry{{Name: "z.bin", Size: int64(len(data)), MTime: es[0].MTime}}, es)
	require.WithinDuration(t, time.Now(), es[0].MTime, time.Minute)
	es, err = inst.List(ctx, "")
	require.NoError(t, err)
	require.Equal(t, "s d", es[0].Name)
	require.Equal(t, "x", es[1].Name)
	_, err = inst.List(ctx, "nope")
	require.ErrorIs(t, err, sandbox.ErrNotFound)
	_, err = inst.ReadFile(ctx, "../../etc/passwd", 0)
	require.ErrorIs(t, err, sandbox.ErrPath)
}
