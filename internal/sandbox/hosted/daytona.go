package hosted

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/svcdev/svc/internal/sandbox"
)

// Daytona serves the daytona type: sandboxes made, started, stopped and
// deleted through Daytona's REST API, and commands and files through the
// sandbox's toolbox (the toolbox proxy URL the API returns, plus the
// sandbox id).
type Daytona struct {
	client *http.Client
	poll   time.Duration
}

// NewDaytona returns the daytona driver.
func NewDaytona(client *http.Client) *Daytona { return &Daytona{client: client, poll: pollInterval} }

const daytonaDefaultAPI = "https://app.daytona.io/api"

type daytonaProvider struct {
	APIURL string `json:"api_url"`
	Target string `json:"target"`
}

type daytonaTemplate struct {
	Image             string `json:"image"`
	Snapshot          string `json:"snapshot"`
	CPU               int    `json:"cpu"`
	MemoryGB          int    `json:"memory_gb"`
	DiskGB            int    `json:"disk_gb"`
	AutoStopMinutes   *int   `json:"auto_stop_minutes"`
	AutoDeleteMinutes *int   `json:"auto_delete_minutes"`
}

// daytonaHandle is what reattaching needs: the id, the toolbox proxy URL and
// the working directory. Daytona ends sandboxes on idle timers only, so
// there is no lifetime deadline.
type daytonaHandle struct {
	SandboxID  string `json:"sandbox_id"`
	ToolboxURL string `json:"toolbox_url"`
	Workdir    string `json:"workdir"`
}

// daytonaSandbox is the API's Sandbox.
type daytonaSandbox struct {
	ID              string `json:"id"`
	State           string `json:"state"`
	ToolboxProxyURL string `json:"toolboxProxyUrl"`
}

func (d *Daytona) setup(spec sandbox.Spec) (api, daytonaProvider, daytonaTemplate, error) {
	var p daytonaProvider
	var c struct {
		APIKey string `json:"api_key"`
	}
	var t daytonaTemplate
	for _, x := range []struct {
		what string
		raw  []byte
		v    any
	}{{"provider configuration", spec.Provider, &p}, {"credential", spec.Credential, &c}, {"template configuration", spec.Template, &t}} {
		if err := decodeJSON(TypeDaytona, x.what, x.raw, x.v); err != nil {
			return api{}, p, t, err
		}
	}
	if c.APIKey == "" {
		return api{}, p, t, configError(TypeDaytona, "the provider has no API key")
	}
	base, err := baseURL(TypeDaytona, p.APIURL, daytonaDefaultAPI)
	if err != nil {
		return api{}, p, t, err
	}
	return api{client: d.client, vendor: TypeDaytona, base: base, header: http.Header{"Authorization": {"Bearer " + c.APIKey}}}, p, t, nil
}

// Create makes a sandbox from the template's snapshot or image, waits until
// it has started and records its toolbox URL and working directory.
func (d *Daytona) Create(ctx context.Context, spec sandbox.Spec) (sandbox.Handle, error) {
	a, p, t, err := d.setup(spec)
	if err != nil {
		return nil, err
	}
	body := map[string]any{
		"labels": map[string]string{"svc_environment_id": spec.EnvironmentID, "svc_workspace_id": spec.WorkspaceID},
		"public": false,
	}
	switch {
	case t.Snapshot != "":
		body["snapshot"] = t.Snapshot
	case t.Image != "":
		// An image is built declaratively: a one-line Dockerfile, as the
		// vendor's SDKs send for Image.base(name).
		body["buildInfo"] = map[string]any{"dockerfileContent": "FROM " + t.Image + "\n"}
	}
	if p.Target != "" {
		body["target"] = p.Target
	}
	for k, v := range map[string]int{"cpu": t.CPU, "memory": t.MemoryGB, "disk": t.DiskGB} {
		if v > 0 {
			body[k] = v
		}
	}
	if t.AutoStopMinutes != nil {
		body["autoStopInterval"] = *t.AutoStopMinutes
	}
	if t.AutoDeleteMinutes != nil {
		body["autoDeleteInterval"] = *t.AutoDeleteMinutes
	}
	cctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	var sb daytonaSandbox
	if err := a.do(cctx, call{op: "create sandbox", method: http.MethodPost, path: "/sandbox", json: body, out: &sb}); err != nil {
		return nil, err
	}
	if sb.ID == "" {
		return nil, &Error{Vendor: TypeDaytona, Op: "create sandbox", Msg: "the answer has no sandbox id"}
	}
	sb, err = d.waitStarted(ctx, a, sb)
	if err != nil {
		return nil, err
	}
	h := daytonaHandle{SandboxID: sb.ID, ToolboxURL: strings.TrimRight(sb.ToolboxProxyURL, "/")}
	if h.ToolboxURL == "" {
		return nil, &Error{Vendor: TypeDaytona, Op: "create sandbox", Msg: "the answer has no toolbox URL"}
	}
	var wd struct {
		Dir string `json:"dir"`
	}
	tb := d.toolbox(a, h)
	wctx, wcancel := context.WithTimeout(ctx, controlTimeout)
	defer wcancel()
	if err := tb.do(wctx, call{op: "read working directory", method: http.MethodGet, path: "/work-dir", out: &wd}); err != nil {
		return nil, err
	}
	if !strings.HasPrefix(wd.Dir, "/") {
		return nil, &Error{Vendor: TypeDaytona, Op: "read working directory", Msg: "the answer is not an absolute path"}
	}
	h.Workdir = strings.TrimRight(wd.Dir, "/")
	if h.Workdir == "" {
		h.Workdir = "/"
	}
	b, err := json.Marshal(h)
	return sandbox.Handle(b), err
}

// daytonaEnded are the states of a sandbox that will not start again.
var daytonaEnded = map[string]bool{"destroyed": true, "destroying": true, "error": true, "build_failed": true}

// waitStarted polls the sandbox until it has started, starting it when it
// is stopped or archived.
func (d *Daytona) waitStarted(ctx context.Context, a api, sb daytonaSandbox) (daytonaSandbox, error) {
	ctx, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	started := false
	for {
		switch {
		case sb.State == "started":
			return sb, nil
		case daytonaEnded[sb.State]:
			return sb, goneError(TypeDaytona, "wait for the sandbox", sb.State)
		case (sb.State == "stopped" || sb.State == "archived") && !started:
			if err := a.do(ctx, call{op: "start sandbox", method: http.MethodPost, path: "/sandbox/" + seg(sb.ID) + "/start"}); err != nil {
				return sb, gone(err)
			}
			started = true
		}
		select {
		case <-ctx.Done():
			return sb, &Error{Vendor: TypeDaytona, Op: "wait for the sandbox", Msg: "it did not start in time (state " + sb.State + ")"}
		case <-time.After(d.poll):
		}
		next, err := d.get(ctx, a, sb.ID)
		if err != nil {
			return sb, err
		}
		sb = next
	}
}

func (d *Daytona) get(ctx context.Context, a api, id string) (daytonaSandbox, error) {
	var sb daytonaSandbox
	if err := a.do(ctx, call{op: "read sandbox", method: http.MethodGet, path: "/sandbox/" + seg(id), out: &sb}); err != nil {
		return sb, gone(err)
	}
	if sb.ID == "" {
		sb.ID = id
	}
	return sb, nil
}

func (d *Daytona) parseHandle(h sandbox.Handle) (daytonaHandle, error) {
	var dh daytonaHandle
	if err := json.Unmarshal(h, &dh); err != nil || dh.SandboxID == "" || dh.ToolboxURL == "" || !strings.HasPrefix(dh.Workdir, "/") {
		return daytonaHandle{}, configError(TypeDaytona, "invalid handle")
	}
	return dh, nil
}

// toolbox is the API of one sandbox's toolbox; it takes the same key.
func (d *Daytona) toolbox(a api, h daytonaHandle) api {
	return api{client: d.client, vendor: TypeDaytona, base: h.ToolboxURL + "/" + seg(h.SandboxID), header: a.header}
}

// Open attaches to the sandbox, starting it when it is stopped or archived.
func (d *Daytona) Open(ctx context.Context, spec sandbox.Spec, h sandbox.Handle) (sandbox.Instance, error) {
	a, _, _, err := d.setup(spec)
	if err != nil {
		return nil, err
	}
	dh, err := d.parseHandle(h)
	if err != nil {
		return nil, err
	}
	sb, err := d.get(ctx, a, dh.SandboxID)
	if err != nil {
		return nil, err
	}
	sb, err = d.waitStarted(ctx, a, sb)
	if err != nil {
		return nil, err
	}
	if u := strings.TrimRight(sb.ToolboxProxyURL, "/"); u != "" {
		dh.ToolboxURL = u
	}
	return &daytonaInstance{tb: d.toolbox(a, dh), h: dh}, nil
}

// Stop stops the sandbox; its file system is kept for a later Open.
func (d *Daytona) Stop(ctx context.Context, spec sandbox.Spec, h sandbox.Handle) error {
	a, _, _, err := d.setup(spec)
	if err != nil {
		return err
	}
	dh, err := d.parseHandle(h)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	err = a.do(ctx, call{op: "stop sandbox", method: http.MethodPost, path: "/sandbox/" + seg(dh.SandboxID) + "/stop"})
	if err == nil {
		return nil
	}
	// Daytona refuses to stop a sandbox that is not started; one already
	// stopped (or archived) is what was asked for.
	sb, gerr := d.get(ctx, a, dh.SandboxID)
	if gerr != nil {
		return gerr
	}
	if sb.State == "stopped" || sb.State == "archived" || sb.State == "stopping" {
		return nil
	}
	return err
}

// Destroy deletes the sandbox; one already gone counts as destroyed.
func (d *Daytona) Destroy(ctx context.Context, spec sandbox.Spec, h sandbox.Handle) error {
	a, _, _, err := d.setup(spec)
	if err != nil {
		return err
	}
	dh, err := d.parseHandle(h)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	err = a.do(ctx, call{op: "delete sandbox", method: http.MethodDelete, path: "/sandbox/" + seg(dh.SandboxID)})
	if err != nil && !hasStatus(err, http.StatusNotFound) {
		return err
	}
	return nil
}

// Renew is unsupported: Daytona ends sandboxes only on its idle timers
// (auto-stop, auto-delete), which the toolbox calls reset.
func (d *Daytona) Renew(context.Context, sandbox.Spec, sandbox.Handle) error {
	return sandbox.ErrUnsupported
}

var _ sandbox.Driver = (*Daytona)(nil)
