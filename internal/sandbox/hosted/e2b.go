package hosted

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/svcdev/svc/internal/sandbox"
)

// E2B serves the e2b type: sandboxes made, paused (its stop), resumed,
// renewed and killed through E2B's REST API, and commands and files through
// envd, the daemon each sandbox runs at https://49983-<id>.<domain>.
type E2B struct {
	client *http.Client
	now    func() time.Time
}

// NewE2B returns the e2b driver.
func NewE2B(client *http.Client) *E2B { return &E2B{client: client, now: time.Now} }

const (
	e2bDefaultAPI     = "https://api.e2b.app"
	e2bDefaultTimeout = 300
	e2bEnvdPort       = "49983"
	e2bUser           = "user"
	e2bWorkdir        = "/home/user"
)

type e2bProvider struct {
	APIURL string `json:"api_url"`
}

type e2bTemplate struct {
	Template       string `json:"template"`
	TimeoutSeconds int    `json:"timeout_seconds"`
}

// e2bHandle is what reattaching needs: the id, the domain its envd answers
// under, envd's access token (secure sandboxes) and the lifetime's end.
type e2bHandle struct {
	SandboxID   string    `json:"sandbox_id"`
	Domain      string    `json:"domain"`
	AccessToken string    `json:"access_token,omitempty"`
	Workdir     string    `json:"workdir"`
	ExpiresAt   time.Time `json:"expires_at"`
}

// e2bSandbox is the API's Sandbox (create, connect) answer.
type e2bSandbox struct {
	SandboxID       string  `json:"sandboxID"`
	TemplateID      string  `json:"templateID"`
	Domain          *string `json:"domain"`
	EnvdVersion     string  `json:"envdVersion"`
	EnvdAccessToken *string `json:"envdAccessToken"`
}

type e2bSetup struct {
	api      api
	template e2bTemplate
	domain   string // default sandbox domain, from the API URL
}

func (d *E2B) setup(spec sandbox.Spec) (e2bSetup, error) {
	var p e2bProvider
	var c struct {
		APIKey string `json:"api_key"`
	}
	var t e2bTemplate
	if err := decodeJSON(TypeE2B, "provider configuration", spec.Provider, &p); err != nil {
		return e2bSetup{}, err
	}
	if err := decodeJSON(TypeE2B, "credential", spec.Credential, &c); err != nil {
		return e2bSetup{}, err
	}
	if err := decodeJSON(TypeE2B, "template configuration", spec.Template, &t); err != nil {
		return e2bSetup{}, err
	}
	if c.APIKey == "" {
		return e2bSetup{}, configError(TypeE2B, "the provider has no API key")
	}
	base, err := baseURL(TypeE2B, p.APIURL, e2bDefaultAPI)
	if err != nil {
		return e2bSetup{}, err
	}
	if t.Template == "" {
		t.Template = "base"
	}
	if t.TimeoutSeconds <= 0 {
		t.TimeoutSeconds = e2bDefaultTimeout
	}
	u, _ := url.Parse(base)
	domain := strings.TrimPrefix(u.Host, "api.")
	return e2bSetup{
		api:      api{client: d.client, vendor: TypeE2B, base: base, header: http.Header{"X-Api-Key": {c.APIKey}}},
		template: t, domain: domain,
	}, nil
}

// Create makes a sandbox from the template; E2B answers once envd is up.
func (d *E2B) Create(ctx context.Context, spec sandbox.Spec) (sandbox.Handle, error) {
	s, err := d.setup(spec)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	body := map[string]any{
		"templateID": s.template.Template,
		"timeout":    s.template.TimeoutSeconds,
		"secure":     true,
		"autoPause":  false,
		"metadata":   map[string]string{"svc_environment_id": spec.EnvironmentID, "svc_workspace_id": spec.WorkspaceID},
	}
	var sb e2bSandbox
	if err := s.api.do(ctx, call{op: "create sandbox", method: http.MethodPost, path: "/sandboxes", json: body, out: &sb}); err != nil {
		return nil, err
	}
	if sb.SandboxID == "" {
		return nil, &Error{Vendor: TypeE2B, Op: "create sandbox", Msg: "the answer has no sandbox id"}
	}
	return d.handle(s, sb)
}

func (d *E2B) handle(s e2bSetup, sb e2bSandbox) (sandbox.Handle, error) {
	h := e2bHandle{
		SandboxID: sb.SandboxID, Domain: s.domain, Workdir: e2bWorkdir,
		ExpiresAt: d.now().UTC().Add(time.Duration(s.template.TimeoutSeconds) * time.Second),
	}
	if sb.Domain != nil && *sb.Domain != "" {
		h.Domain = *sb.Domain
	}
	if sb.EnvdAccessToken != nil {
		h.AccessToken = *sb.EnvdAccessToken
	}
	b, err := json.Marshal(h)
	return sandbox.Handle(b), err
}

func (d *E2B) parseHandle(h sandbox.Handle) (e2bHandle, error) {
	var eh e2bHandle
	if err := json.Unmarshal(h, &eh); err != nil || eh.SandboxID == "" || eh.Domain == "" {
		return e2bHandle{}, configError(TypeE2B, "invalid handle")
	}
	if eh.Workdir == "" {
		eh.Workdir = e2bWorkdir
	}
	return eh, nil
}

// Open connects to the sandbox, resuming it when paused; its timeout is set
// to the template's lifetime from now (E2B never shortens a running one).
func (d *E2B) Open(ctx context.Context, spec sandbox.Spec, h sandbox.Handle) (sandbox.Instance, error) {
	s, err := d.setup(spec)
	if err != nil {
		return nil, err
	}
	eh, err := d.parseHandle(h)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	var sb e2bSandbox
	err = s.api.do(cctx, call{
		op: "connect to sandbox", method: http.MethodPost, path: "/sandboxes/" + seg(eh.SandboxID) + "/connect",
		json: map[string]any{"timeout": s.template.TimeoutSeconds}, out: &sb,
	})
	if err != nil {
		return nil, gone(err)
	}
	if sb.EnvdAccessToken != nil && *sb.EnvdAccessToken != "" {
		eh.AccessToken = *sb.EnvdAccessToken
	}
	if sb.Domain != nil && *sb.Domain != "" {
		eh.Domain = *sb.Domain
	}
	return newE2BInstance(d.client, eh), nil
}

// Stop pauses the sandbox (memory and files are kept; Open resumes it).
func (d *E2B) Stop(ctx context.Context, spec sandbox.Spec, h sandbox.Handle) error {
	return d.control(ctx, spec, h, "pause sandbox", http.MethodPost, "/pause", nil, func(err error) error {
		if hasStatus(err, http.StatusConflict) { // already paused
			return nil
		}
		return gone(err)
	})
}

// Destroy kills the sandbox; one already gone counts as destroyed.
func (d *E2B) Destroy(ctx context.Context, spec sandbox.Spec, h sandbox.Handle) error {
	return d.control(ctx, spec, h, "kill sandbox", http.MethodDelete, "", nil, func(err error) error {
		if hasStatus(err, http.StatusNotFound) {
			return nil
		}
		return err
	})
}

// Renew sets the sandbox's timeout to the template's lifetime from now.
func (d *E2B) Renew(ctx context.Context, spec sandbox.Spec, h sandbox.Handle) error {
	s, err := d.setup(spec)
	if err != nil {
		return err
	}
	body := map[string]any{"timeout": s.template.TimeoutSeconds}
	return d.control(ctx, spec, h, "set sandbox timeout", http.MethodPost, "/timeout", body, gone)
}

func (d *E2B) control(ctx context.Context, spec sandbox.Spec, h sandbox.Handle, op, method, suffix string, body any, onErr func(error) error) error {
	s, err := d.setup(spec)
	if err != nil {
		return err
	}
	eh, err := d.parseHandle(h)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	err = s.api.do(ctx, call{op: op, method: method, path: "/sandboxes/" + seg(eh.SandboxID) + suffix, json: body})
	if err != nil {
		return onErr(err)
	}
	return nil
}
