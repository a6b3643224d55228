package hosted

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/svcdev/svc/internal/sandbox"
)

// Kubernetes serves the kubernetes type: one pod per environment in the
// provider's namespace, made and deleted through the API server's REST API,
// with commands and files through pod exec over WebSocket
// (v5.channel.k8s.io). Pods cannot be stopped; their lifetime is
// activeDeadlineSeconds, after which Kubernetes ends them.
type Kubernetes struct {
	client  *http.Client
	withTLS func(*tls.Config) *http.Client
	poll    time.Duration
	now     func() time.Time

	mu   sync.Mutex
	byCA map[string]*http.Client
}

// NewKubernetes returns the kubernetes driver. withTLS builds a guarded
// client trusting a provider's own CA (the credential's ca_cert), for
// example func(c *tls.Config) *http.Client { return policy.HTTPClient(0,
// endpoint.WithTLSConfig(c)) }; nil refuses providers that set one.
func NewKubernetes(client *http.Client, withTLS func(*tls.Config) *http.Client) *Kubernetes {
	return &Kubernetes{client: client, withTLS: withTLS, poll: pollInterval, now: time.Now, byCA: map[string]*http.Client{}}
}

const (
	kubeContainer      = "sandbox"
	kubeDefaultTimeout = 3600
	kubeDefaultNS      = "default"
)

type kubeTemplate struct {
	Image          string  `json:"image"`
	CPU            float64 `json:"cpu"`
	MemoryMB       int     `json:"memory_mb"`
	ServiceAccount string  `json:"service_account"`
	RuntimeClass   string  `json:"runtime_class"`
	TimeoutSeconds int     `json:"timeout_seconds"`
}

// kubeHandle is what reattaching needs: the pod, its namespace, the
// container user's home directory and the end of the pod's lifetime.
type kubeHandle struct {
	Pod       string    `json:"pod"`
	Namespace string    `json:"namespace"`
	Workdir   string    `json:"workdir"`
	ExpiresAt time.Time `json:"expires_at"`
}

// kubePod is the part of a Pod the driver reads.
type kubePod struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Status struct {
		Phase             string `json:"phase"`
		ContainerStatuses []struct {
			Name  string `json:"name"`
			Ready bool   `json:"ready"`
			State struct {
				Running *struct{} `json:"running"`
				Waiting *struct {
					Reason string `json:"reason"`
				} `json:"waiting"`
			} `json:"state"`
		} `json:"containerStatuses"`
	} `json:"status"`
}

type kubeSetup struct {
	api       api
	namespace string
	template  kubeTemplate
}

func (d *Kubernetes) setup(spec sandbox.Spec) (kubeSetup, error) {
	var p struct {
		APIServer string `json:"api_server"`
		Namespace string `json:"namespace"`
	}
	var c struct {
		Token  string `json:"token"`
		CACert string `json:"ca_cert"`
	}
	var t kubeTemplate
	for _, x := range []struct {
		what string
		raw  []byte
		v    any
	}{{"provider configuration", spec.Provider, &p}, {"credential", spec.Credential, &c}, {"template configuration", spec.Template, &t}} {
		if err := decodeJSON(TypeKubernetes, x.what, x.raw, x.v); err != nil {
			return kubeSetup{}, err
		}
	}
	if c.Token == "" {
		return kubeSetup{}, configError(TypeKubernetes, "the provider has no token")
	}
	if p.APIServer == "" {
		return kubeSetup{}, configError(TypeKubernetes, "the provider has no API server URL")
	}
	base, err := baseURL(TypeKubernetes, p.APIServer, "")
	if err != nil {
		return kubeSetup{}, err
	}
	client, err := d.clientFor(c.CACert)
	if err != nil {
		return kubeSetup{}, err
	}
	if p.Namespace == "" {
		p.Namespace = kubeDefaultNS
	}
	if t.TimeoutSeconds <= 0 {
		t.TimeoutSeconds = kubeDefaultTimeout
	}
	return kubeSetup{
		api:       api{client: client, vendor: TypeKubernetes, base: base, header: http.Header{"Authorization": {"Bearer " + c.Token}}},
		namespace: p.Namespace, template: t,
	}, nil
}

// clientFor returns the client trusting caPEM, built once per CA.
func (d *Kubernetes) clientFor(caPEM string) (*http.Client, error) {
	if strings.TrimSpace(caPEM) == "" {
		return d.client, nil
	}
	if d.withTLS == nil {
		return nil, configError(TypeKubernetes, "this deployment cannot use a provider's own CA certificate")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if c, ok := d.byCA[caPEM]; ok {
		return c, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(caPEM)) {
		return nil, configError(TypeKubernetes, "the credential's ca_cert holds no PEM certificate")
	}
	c := d.withTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	d.byCA[caPEM] = c
	return c, nil
}

func (s kubeSetup) podPath(name string) string {
	p := "/api/v1/namespaces/" + seg(s.namespace) + "/pods"
	if name != "" {
		p += "/" + seg(name)
	}
	return p
}

// kubePodName derives a DNS-1123 pod name from the environment id.
func kubePodName(envID string) string {
	var b strings.Builder
	b.WriteString("svc-")
	for _, r := range strings.ToLower(envID) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return strings.TrimRight(b.String()[:min(b.Len(), 63)], "-")
}

// Create makes the pod (an existing pod of the same environment is reused:
// a worker may die between creating and recording it), waits until its
// container runs and records its home directory.
func (d *Kubernetes) Create(ctx context.Context, spec sandbox.Spec) (sandbox.Handle, error) {
	s, err := d.setup(spec)
	if err != nil {
		return nil, err
	}
	t := s.template
	if t.Image == "" {
		return nil, configError(TypeKubernetes, "the template has no image")
	}
	name := kubePodName(spec.EnvironmentID)
	container := map[string]any{
		"name": kubeContainer, "image": t.Image,
		// The container idles; exec runs the environment's commands.
		"command": []string{"/bin/sh", "-c", "exec sleep " + strconv.Itoa(t.TimeoutSeconds)},
	}
	res := map[string]string{}
	if t.CPU > 0 {
		res["cpu"] = strconv.Itoa(int(math.Ceil(t.CPU*1000))) + "m"
	}
	if t.MemoryMB > 0 {
		res["memory"] = strconv.Itoa(t.MemoryMB) + "Mi"
	}
	if len(res) > 0 {
		container["resources"] = map[string]any{"requests": res, "limits": res}
	}
	podSpec := map[string]any{
		"containers":                    []any{container},
		"restartPolicy":                 "Never",
		"activeDeadlineSeconds":         t.TimeoutSeconds,
		"automountServiceAccountToken":  false,
		"terminationGracePeriodSeconds": 5,
	}
	if t.ServiceAccount != "" {
		podSpec["serviceAccountName"] = t.ServiceAccount
	}
	if t.RuntimeClass != "" {
		podSpec["runtimeClassName"] = t.RuntimeClass
	}
	body := map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{
			"name":   name,
			"labels": map[string]string{"app.kubernetes.io/managed-by": "svc", "svc.dev/environment-id": spec.EnvironmentID},
		},
		"spec": podSpec,
	}
	cctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	err = s.api.do(cctx, call{op: "create pod", method: http.MethodPost, path: s.podPath(""), json: body, out: &kubePod{}})
	if err != nil && !hasStatus(err, http.StatusConflict) {
		return nil, err
	}
	expires := d.now().UTC().Add(time.Duration(t.TimeoutSeconds) * time.Second)
	if err := d.waitRunning(ctx, s, name); err != nil {
		return nil, err
	}
	inst := &kubeInstance{s: s, h: kubeHandle{Pod: name, Namespace: s.namespace}}
	out, err := inst.exec(ctx, []string{"sh", "-c", `printf %s "$HOME"`}, nil, false, 4096, 4096, controlTimeout)
	if err != nil {
		return nil, err
	}
	home := strings.TrimRight(string(out.stdout.Bytes()), "/")
	if out.exit != 0 || !strings.HasPrefix(string(out.stdout.Bytes()), "/") {
		home = "/tmp" // no HOME: a directory every image has and the user can write
	} else if home == "" {
		home = "/"
	}
	b, err := json.Marshal(kubeHandle{Pod: name, Namespace: s.namespace, Workdir: home, ExpiresAt: expires})
	return sandbox.Handle(b), err
}

// waitRunning polls the pod until its container runs.
func (d *Kubernetes) waitRunning(ctx context.Context, s kubeSetup, name string) error {
	ctx, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	for {
		var pod kubePod
		if err := s.api.do(ctx, call{op: "read pod", method: http.MethodGet, path: s.podPath(name), out: &pod}); err != nil {
			return gone(err)
		}
		switch pod.Status.Phase {
		case "Succeeded", "Failed":
			return goneError(TypeKubernetes, "wait for the pod", strings.ToLower(pod.Status.Phase))
		case "Running":
			for _, cs := range pod.Status.ContainerStatuses {
				if cs.Name == kubeContainer && cs.State.Running != nil {
					return nil
				}
			}
		}
		for _, cs := range pod.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff" || w.Reason == "InvalidImageName") {
				return &Error{Vendor: TypeKubernetes, Op: "wait for the pod", Msg: "the image cannot be pulled (" + w.Reason + ")"}
			}
		}
		select {
		case <-ctx.Done():
			return &Error{Vendor: TypeKubernetes, Op: "wait for the pod", Msg: "it did not start in time (phase " + pod.Status.Phase + ")"}
		case <-time.After(d.poll):
		}
	}
}

func (d *Kubernetes) parse(spec sandbox.Spec, h sandbox.Handle) (kubeSetup, kubeHandle, error) {
	s, err := d.setup(spec)
	if err != nil {
		return kubeSetup{}, kubeHandle{}, err
	}
	var kh kubeHandle
	if err := json.Unmarshal(h, &kh); err != nil || kh.Pod == "" || kh.Namespace == "" || !strings.HasPrefix(kh.Workdir, "/") {
		return kubeSetup{}, kubeHandle{}, configError(TypeKubernetes, "invalid handle")
	}
	s.namespace = kh.Namespace // the pod lives where it was made
	return s, kh, nil
}

// Open attaches to the pod once its container runs; a pod that ended
// (deadline passed, deleted) is gone.
func (d *Kubernetes) Open(ctx context.Context, spec sandbox.Spec, h sandbox.Handle) (sandbox.Instance, error) {
	s, kh, err := d.parse(spec, h)
	if err != nil {
		return nil, err
	}
	if err := d.waitRunning(ctx, s, kh.Pod); err != nil {
		return nil, err
	}
	return &kubeInstance{s: s, h: kh}, nil
}

// Stop is unsupported: a pod cannot be stopped and resumed.
func (d *Kubernetes) Stop(context.Context, sandbox.Spec, sandbox.Handle) error {
	return sandbox.ErrUnsupported
}

// Destroy deletes the pod at once; one already gone counts as destroyed.
func (d *Kubernetes) Destroy(ctx context.Context, spec sandbox.Spec, h sandbox.Handle) error {
	s, kh, err := d.parse(spec, h)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	err = s.api.do(ctx, call{op: "delete pod", method: http.MethodDelete, path: s.podPath(kh.Pod), query: url.Values{"gracePeriodSeconds": {"0"}}})
	if err != nil && !hasStatus(err, http.StatusNotFound) {
		return err
	}
	return nil
}

// Renew is unsupported: a pod's activeDeadlineSeconds can be lowered but
// never raised.
func (d *Kubernetes) Renew(context.Context, sandbox.Spec, sandbox.Handle) error {
	return sandbox.ErrUnsupported
}

var _ sandbox.Driver = (*Kubernetes)(nil)

// kubeStatus is the metav1.Status the exec stream ends with.
type kubeStatus struct {
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Details struct {
		Causes []struct {
			Reason  string `json:"reason"`
			Message string `json:"message"`
		} `json:"causes"`
	} `json:"details"`
}

// exitCode reads the command's exit status from the status.
func (st kubeStatus) exitCode() (int, error) {
	if st.Status == "Success" {
		return 0, nil
	}
	if st.Reason == "NonZeroExitCode" {
		for _, c := range st.Details.Causes {
			if c.Reason == "ExitCode" {
				if n, err := strconv.Atoi(c.Message); err == nil {
					return n, nil
				}
			}
		}
	}
	return -1, &Error{Vendor: TypeKubernetes, Op: "run command", Msg: fmt.Sprintf("the command could not run (%s)", cmpOr(st.Reason, "unknown"))}
}
