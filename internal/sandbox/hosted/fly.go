package hosted

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/svcdev/svc/internal/sandbox"
)

// FlyMachines serves the fly_machines type: one Machine per environment in
// the provider's app, made, started, stopped and destroyed through the
// Machines API, with commands and files through its exec endpoint (Fly has
// no file API; files move as base64 through small shell scripts).
type FlyMachines struct {
	client *http.Client
	poll   time.Duration
	now    func() time.Time
}

// NewFlyMachines returns the fly_machines driver.
func NewFlyMachines(client *http.Client) *FlyMachines {
	return &FlyMachines{client: client, poll: pollInterval, now: time.Now}
}

const (
	flyDefaultAPI     = "https://api.machines.dev"
	flyDefaultTimeout = 3600
)

type flyProvider struct {
	AppName string `json:"app_name"`
	BaseURL string `json:"base_url"`
	Region  string `json:"region"`
}

type flyTemplate struct {
	Image          string `json:"image"`
	CPUKind        string `json:"cpu_kind"`
	CPUs           int    `json:"cpus"`
	MemoryMB       int    `json:"memory_mb"`
	Region         string `json:"region"`
	TimeoutSeconds int    `json:"timeout_seconds"`
}

// flyHandle is what reattaching needs: the machine, its app, its user's home
// directory and the end of its lifetime (its main process sleeps that long,
// then the machine stops).
type flyHandle struct {
	MachineID string    `json:"machine_id"`
	AppName   string    `json:"app_name"`
	Workdir   string    `json:"workdir"`
	ExpiresAt time.Time `json:"expires_at"`
}

// flyMachine is the API's Machine.
type flyMachine struct {
	ID    string `json:"id"`
	State string `json:"state"`
}

func (d *FlyMachines) setup(spec sandbox.Spec) (api, flyProvider, flyTemplate, error) {
	var p flyProvider
	var c struct {
		APIToken string `json:"api_token"`
	}
	var t flyTemplate
	for _, x := range []struct {
		what string
		raw  []byte
		v    any
	}{{"provider configuration", spec.Provider, &p}, {"credential", spec.Credential, &c}, {"template configuration", spec.Template, &t}} {
		if err := decodeJSON(TypeFlyMachines, x.what, x.raw, x.v); err != nil {
			return api{}, p, t, err
		}
	}
	if c.APIToken == "" {
		return api{}, p, t, configError(TypeFlyMachines, "the provider has no API token")
	}
	if p.AppName == "" {
		return api{}, p, t, configError(TypeFlyMachines, "the provider has no app name")
	}
	base, err := baseURL(TypeFlyMachines, p.BaseURL, flyDefaultAPI)
	if err != nil {
		return api{}, p, t, err
	}
	// Macaroon tokens (`fly tokens create`) carry their own scheme, "FlyV1 ...".
	auth := "Bearer " + c.APIToken
	if strings.HasPrefix(c.APIToken, "FlyV1 ") {
		auth = c.APIToken
	}
	if t.TimeoutSeconds <= 0 {
		t.TimeoutSeconds = flyDefaultTimeout
	}
	a := api{client: d.client, vendor: TypeFlyMachines, base: base + "/v1/apps/" + seg(p.AppName), header: http.Header{"Authorization": {auth}}}
	return a, p, t, nil
}

// Create makes a machine whose main process sleeps for the lifetime, waits
// until it has started and records its home directory.
func (d *FlyMachines) Create(ctx context.Context, spec sandbox.Spec) (sandbox.Handle, error) {
	a, p, t, err := d.setup(spec)
	if err != nil {
		return nil, err
	}
	if t.Image == "" {
		return nil, configError(TypeFlyMachines, "the template has no image")
	}
	guest := map[string]any{"cpu_kind": "shared", "cpus": 1, "memory_mb": 256}
	if t.CPUKind != "" {
		guest["cpu_kind"] = t.CPUKind
	}
	if t.CPUs > 0 {
		guest["cpus"] = t.CPUs
	}
	if t.MemoryMB > 0 {
		guest["memory_mb"] = t.MemoryMB
	}
	body := map[string]any{
		"name": strings.ReplaceAll(spec.EnvironmentID, "_", "-"),
		"config": map[string]any{
			"image": t.Image,
			"guest": guest,
			// The machine idles for its lifetime, then stops; exec runs the
			// environment's commands beside this process.
			"init":     map[string]any{"exec": []string{"/bin/sh", "-c", "exec sleep " + strconv.Itoa(t.TimeoutSeconds)}},
			"restart":  map[string]any{"policy": "no"},
			"metadata": map[string]string{"svc_environment_id": spec.EnvironmentID, "svc_workspace_id": spec.WorkspaceID},
		},
	}
	if region := cmpOr(t.Region, p.Region); region != "" {
		body["region"] = region
	}
	cctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	var m flyMachine
	if err := a.do(cctx, call{op: "create machine", method: http.MethodPost, path: "/machines", json: body, out: &m}); err != nil {
		return nil, err
	}
	if m.ID == "" {
		return nil, &Error{Vendor: TypeFlyMachines, Op: "create machine", Msg: "the answer has no machine id"}
	}
	expires := d.now().UTC().Add(time.Duration(t.TimeoutSeconds) * time.Second)
	if _, err := d.waitStarted(ctx, a, m); err != nil {
		return nil, err
	}
	inst := &flyInstance{a: a, h: flyHandle{MachineID: m.ID}}
	out, err := inst.exec(ctx, []string{"sh", "-c", `printf %s "$HOME"`}, controlTimeout)
	if err != nil {
		return nil, err
	}
	if out.ExitCode != 0 || !strings.HasPrefix(out.Stdout, "/") {
		return nil, &Error{Vendor: TypeFlyMachines, Op: "read home directory", Msg: "the machine has no absolute HOME"}
	}
	home := strings.TrimRight(out.Stdout, "/")
	if home == "" {
		home = "/"
	}
	b, err := json.Marshal(flyHandle{MachineID: m.ID, AppName: p.AppName, Workdir: home, ExpiresAt: expires})
	return sandbox.Handle(b), err
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// flyEnded are the states of a machine that will not start again.
var flyEnded = map[string]bool{"destroying": true, "destroyed": true, "failed": true}

// waitStarted polls the machine until it has started, starting it when it
// is stopped or suspended.
func (d *FlyMachines) waitStarted(ctx context.Context, a api, m flyMachine) (flyMachine, error) {
	ctx, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	started := false
	for {
		switch {
		case m.State == "started":
			return m, nil
		case flyEnded[m.State]:
			return m, goneError(TypeFlyMachines, "wait for the machine", m.State)
		case (m.State == "stopped" || m.State == "suspended") && !started:
			if err := a.do(ctx, call{op: "start machine", method: http.MethodPost, path: "/machines/" + seg(m.ID) + "/start"}); err != nil {
				return m, gone(err)
			}
			started = true
		}
		select {
		case <-ctx.Done():
			return m, &Error{Vendor: TypeFlyMachines, Op: "wait for the machine", Msg: "it did not start in time (state " + m.State + ")"}
		case <-time.After(d.poll):
		}
		next, err := d.get(ctx, a, m.ID)
		if err != nil {
			return m, err
		}
		m = next
	}
}

func (d *FlyMachines) get(ctx context.Context, a api, id string) (flyMachine, error) {
	var m flyMachine
	if err := a.do(ctx, call{op: "read machine", method: http.MethodGet, path: "/machines/" + seg(id), out: &m}); err != nil {
		return m, gone(err)
	}
	if m.ID == "" {
		m.ID = id
	}
	return m, nil
}

func (d *FlyMachines) parse(spec sandbox.Spec, h sandbox.Handle) (api, flyHandle, error) {
	var fh flyHandle
	if err := json.Unmarshal(h, &fh); err != nil || fh.MachineID == "" || fh.AppName == "" || !strings.HasPrefix(fh.Workdir, "/") {
		return api{}, flyHandle{}, configError(TypeFlyMachines, "invalid handle")
	}
	// The handle's app wins: the machine lives there even if the provider's
	// app_name was changed since.
	var p map[string]any
	_ = json.Unmarshal(spec.Provider, &p)
	if p == nil {
		p = map[string]any{}
	}
	p["app_name"] = fh.AppName
	spec.Provider, _ = json.Marshal(p)
	a, _, _, err := d.setup(spec)
	return a, fh, err
}

// Open attaches to the machine, starting it when it is stopped (its main
// process then sleeps a whole lifetime again).
func (d *FlyMachines) Open(ctx context.Context, spec sandbox.Spec, h sandbox.Handle) (sandbox.Instance, error) {
	a, fh, err := d.parse(spec, h)
	if err != nil {
		return nil, err
	}
	m, err := d.get(ctx, a, fh.MachineID)
	if err != nil {
		return nil, err
	}
	if _, err := d.waitStarted(ctx, a, m); err != nil {
		return nil, err
	}
	return &flyInstance{a: a, h: fh}, nil
}

// Stop stops the machine; its root file system is kept until it is destroyed
// (Fly may reset it when the machine moves host).
func (d *FlyMachines) Stop(ctx context.Context, spec sandbox.Spec, h sandbox.Handle) error {
	a, fh, err := d.parse(spec, h)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	err = a.do(ctx, call{op: "stop machine", method: http.MethodPost, path: "/machines/" + seg(fh.MachineID) + "/stop"})
	if err == nil {
		return nil
	}
	m, gerr := d.get(ctx, a, fh.MachineID)
	if gerr != nil {
		return gerr
	}
	switch {
	case m.State == "stopped" || m.State == "stopping" || m.State == "suspended":
		return nil
	case flyEnded[m.State]:
		return goneError(TypeFlyMachines, "stop machine", m.State)
	}
	return err
}

// Destroy force-destroys the machine; one already gone counts as destroyed.
func (d *FlyMachines) Destroy(ctx context.Context, spec sandbox.Spec, h sandbox.Handle) error {
	a, fh, err := d.parse(spec, h)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	err = a.do(ctx, call{op: "destroy machine", method: http.MethodDelete, path: "/machines/" + seg(fh.MachineID), query: url.Values{"force": {"true"}}})
	if err != nil && !hasStatus(err, http.StatusNotFound) {
		return err
	}
	return nil
}

// Renew is unsupported: a machine's lifetime is its main process's sleep,
// which cannot be lengthened.
func (d *FlyMachines) Renew(context.Context, sandbox.Spec, sandbox.Handle) error {
	return sandbox.ErrUnsupported
}

var _ sandbox.Driver = (*FlyMachines)(nil)
