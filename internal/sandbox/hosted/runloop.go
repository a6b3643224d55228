package hosted

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/svcdev/svc/internal/sandbox"
)

// Runloop serves the runloop type: devboxes made, suspended (its stop),
// resumed, kept alive (its renew) and shut down through Runloop's REST API,
// commands through execute_sync and files through download_file and
// upload_file.
type Runloop struct {
	client *http.Client
	poll   time.Duration
}

// NewRunloop returns the runloop driver.
func NewRunloop(client *http.Client) *Runloop { return &Runloop{client: client, poll: pollInterval} }

const (
	runloopDefaultAPI = "https://api.runloop.ai"
	// runloopDefaultIdle is the idle time after which a devbox is suspended
	// when the template sets none (Runloop's own default lifetime).
	runloopDefaultIdle = 3600
)

type runloopTemplate struct {
	BlueprintName    string `json:"blueprint_name"`
	SnapshotID       string `json:"snapshot_id"`
	ResourceSize     string `json:"resource_size"`
	KeepAliveSeconds int    `json:"keep_alive_seconds"`
}

// runloopHandle is what reattaching needs: the devbox id and its user's home
// directory, the working directory. Runloop suspends idle devboxes rather
// than ending them on a timer, so there is no lifetime deadline.
type runloopHandle struct {
	DevboxID string `json:"devbox_id"`
	Workdir  string `json:"workdir"`
}

// runloopDevbox is the API's DevboxView.
type runloopDevbox struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

func (d *Runloop) setup(spec sandbox.Spec) (api, runloopTemplate, error) {
	var p struct {
		BaseURL string `json:"base_url"`
	}
	var c struct {
		APIKey string `json:"api_key"`
	}
	var t runloopTemplate
	for _, x := range []struct {
		what string
		raw  []byte
		v    any
	}{{"provider configuration", spec.Provider, &p}, {"credential", spec.Credential, &c}, {"template configuration", spec.Template, &t}} {
		if err := decodeJSON(TypeRunloop, x.what, x.raw, x.v); err != nil {
			return api{}, t, err
		}
	}
	if c.APIKey == "" {
		return api{}, t, configError(TypeRunloop, "the provider has no API key")
	}
	base, err := baseURL(TypeRunloop, p.BaseURL, runloopDefaultAPI)
	if err != nil {
		return api{}, t, err
	}
	return api{client: d.client, vendor: TypeRunloop, base: base, header: http.Header{"Authorization": {"Bearer " + c.APIKey}}}, t, nil
}

// Create makes a devbox that suspends when idle, waits until it runs and
// records its home directory.
func (d *Runloop) Create(ctx context.Context, spec sandbox.Spec) (sandbox.Handle, error) {
	a, t, err := d.setup(spec)
	if err != nil {
		return nil, err
	}
	idle := t.KeepAliveSeconds
	if idle <= 0 {
		idle = runloopDefaultIdle
	}
	launch := map[string]any{"after_idle": map[string]any{"idle_time_seconds": idle, "on_idle": "suspend"}}
	if t.ResourceSize != "" {
		launch["resource_size_request"] = t.ResourceSize
	}
	body := map[string]any{
		"name":              spec.EnvironmentID,
		"metadata":          map[string]string{"svc_environment_id": spec.EnvironmentID, "svc_workspace_id": spec.WorkspaceID},
		"launch_parameters": launch,
	}
	switch {
	case t.SnapshotID != "":
		body["snapshot_id"] = t.SnapshotID
	case t.BlueprintName != "":
		body["blueprint_name"] = t.BlueprintName
	}
	cctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	var db runloopDevbox
	if err := a.do(cctx, call{op: "create devbox", method: http.MethodPost, path: "/v1/devboxes", json: body, out: &db}); err != nil {
		return nil, err
	}
	if db.ID == "" {
		return nil, &Error{Vendor: TypeRunloop, Op: "create devbox", Msg: "the answer has no devbox id"}
	}
	if _, err := d.waitRunning(ctx, a, db); err != nil {
		return nil, err
	}
	inst := &runloopInstance{a: a, h: runloopHandle{DevboxID: db.ID}}
	res, err := inst.exec(ctx, `printf %s "$HOME"`, execGrace)
	if err != nil {
		return nil, err
	}
	home := strings.TrimRight(res.Stdout, "/")
	if res.ExitStatus != 0 || !strings.HasPrefix(res.Stdout, "/") {
		return nil, &Error{Vendor: TypeRunloop, Op: "read home directory", Msg: "the devbox has no absolute HOME"}
	}
	if home == "" {
		home = "/"
	}
	b, err := json.Marshal(runloopHandle{DevboxID: db.ID, Workdir: home})
	return sandbox.Handle(b), err
}

// waitRunning polls the devbox until it runs, resuming it when suspended.
func (d *Runloop) waitRunning(ctx context.Context, a api, db runloopDevbox) (runloopDevbox, error) {
	ctx, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	resumed := false
	for {
		switch {
		case db.Status == "running":
			return db, nil
		case db.Status == "shutdown" || db.Status == "failure":
			return db, goneError(TypeRunloop, "wait for the devbox", db.Status)
		case db.Status == "suspended" && !resumed:
			if err := a.do(ctx, call{op: "resume devbox", method: http.MethodPost, path: "/v1/devboxes/" + seg(db.ID) + "/resume"}); err != nil {
				return db, gone(err)
			}
			resumed = true
		}
		select {
		case <-ctx.Done():
			return db, &Error{Vendor: TypeRunloop, Op: "wait for the devbox", Msg: "it did not start in time (status " + db.Status + ")"}
		case <-time.After(d.poll):
		}
		next, err := d.get(ctx, a, db.ID)
		if err != nil {
			return db, err
		}
		db = next
	}
}

func (d *Runloop) get(ctx context.Context, a api, id string) (runloopDevbox, error) {
	var db runloopDevbox
	if err := a.do(ctx, call{op: "read devbox", method: http.MethodGet, path: "/v1/devboxes/" + seg(id), out: &db}); err != nil {
		return db, gone(err)
	}
	if db.ID == "" {
		db.ID = id
	}
	return db, nil
}

func (d *Runloop) parse(spec sandbox.Spec, h sandbox.Handle) (api, runloopHandle, error) {
	a, _, err := d.setup(spec)
	if err != nil {
		return api{}, runloopHandle{}, err
	}
	var rh runloopHandle
	if err := json.Unmarshal(h, &rh); err != nil || rh.DevboxID == "" || !strings.HasPrefix(rh.Workdir, "/") {
		return api{}, runloopHandle{}, configError(TypeRunloop, "invalid handle")
	}
	return a, rh, nil
}

// Open attaches to the devbox, resuming it when suspended.
func (d *Runloop) Open(ctx context.Context, spec sandbox.Spec, h sandbox.Handle) (sandbox.Instance, error) {
	a, rh, err := d.parse(spec, h)
	if err != nil {
		return nil, err
	}
	db, err := d.get(ctx, a, rh.DevboxID)
	if err != nil {
		return nil, err
	}
	if _, err := d.waitRunning(ctx, a, db); err != nil {
		return nil, err
	}
	return &runloopInstance{a: a, h: rh}, nil
}

// Stop suspends the devbox (its disk is kept; Open resumes it).
func (d *Runloop) Stop(ctx context.Context, spec sandbox.Spec, h sandbox.Handle) error {
	return d.control(ctx, spec, h, "suspend devbox", "/suspend", func(db runloopDevbox) (bool, error) {
		switch db.Status {
		case "suspended", "suspending":
			return true, nil
		case "shutdown", "failure":
			return false, goneError(TypeRunloop, "suspend devbox", db.Status)
		}
		return false, nil
	})
}

// Destroy shuts the devbox down; one already gone counts as destroyed.
func (d *Runloop) Destroy(ctx context.Context, spec sandbox.Spec, h sandbox.Handle) error {
	err := d.control(ctx, spec, h, "shut down devbox", "/shutdown", func(db runloopDevbox) (bool, error) {
		return db.Status == "shutdown" || db.Status == "failure", nil
	})
	if hasStatus(err, http.StatusNotFound) {
		return nil
	}
	return err
}

// Renew sends the devbox a keep-alive, which restarts its idle timer. A
// suspended devbox has no timer running and needs none.
func (d *Runloop) Renew(ctx context.Context, spec sandbox.Spec, h sandbox.Handle) error {
	return d.control(ctx, spec, h, "keep devbox alive", "/keep_alive", func(db runloopDevbox) (bool, error) {
		switch db.Status {
		case "shutdown", "failure":
			return false, goneError(TypeRunloop, "keep devbox alive", db.Status)
		case "suspended", "suspending":
			return true, nil
		}
		return false, nil
	})
}

// control posts to one of the devbox's actions. When the action is refused,
// the devbox's status decides: settled reports that the refusal means the
// action's outcome is already there (or returns why not).
func (d *Runloop) control(ctx context.Context, spec sandbox.Spec, h sandbox.Handle, op, suffix string, settled func(runloopDevbox) (bool, error)) error {
	a, rh, err := d.parse(spec, h)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	err = a.do(ctx, call{op: op, method: http.MethodPost, path: "/v1/devboxes/" + seg(rh.DevboxID) + suffix})
	if err == nil {
		return nil
	}
	if hasStatus(err, http.StatusNotFound) {
		return gone(err)
	}
	db, gerr := d.get(ctx, a, rh.DevboxID)
	if gerr != nil {
		return gerr
	}
	ok, serr := settled(db)
	if serr != nil {
		return serr
	}
	if ok {
		return nil
	}
	return err
}

var _ sandbox.Driver = (*Runloop)(nil)
