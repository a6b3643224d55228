package environment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/sandbox"
	"github.com/svcdev/svc/internal/secret"
	"github.com/svcdev/svc/internal/webhook"
)

// Runtime makes, reuses and maintains the environments runs use: one per
// thread and template, made on first use, reopened by later runs of the
// thread, stopped or destroyed by maintain_environments when idle past the
// template's thresholds, renewed by renew_environments while in use. The
// vendor's handle is sealed on the row (it may hold a vendor's token).
type Runtime struct {
	pool    *pgxpool.Pool
	q       *db.Queries
	ring    *keyring.Ring
	drivers map[string]sandbox.Driver
	renewal time.Duration
	log     *slog.Logger
}

// NewRuntime returns the runtime over the drivers of the installed
// environment types (by type id). renewal bounds each vendor call of the
// sweeps (environments.renewal_seconds).
func NewRuntime(pool *pgxpool.Pool, ring *keyring.Ring, drivers map[string]sandbox.Driver, renewal time.Duration, log *slog.Logger) *Runtime {
	return &Runtime{pool: pool, q: db.New(), ring: ring, drivers: drivers, renewal: renewal, log: log}
}

// Unusable is why an environment cannot be used now: the model is told, and
// the run goes on.
type Unusable struct{ Reason string }

func (u *Unusable) Error() string { return u.Reason }

// Acquired is an environment attached for a run.
type Acquired struct {
	ID       string
	Instance sandbox.Instance
}

// Acquire attaches the environment of thread threadID made from template
// templateID, making it when the thread has none (or its environment is
// gone). A disabled template or provider, or a type this binary cannot run,
// is *Unusable. principalID is who the run acts for.
func (rt *Runtime) Acquire(ctx context.Context, workspaceID, threadID, templateID, principalID string) (Acquired, error) {
	tpl, err := rt.q.EnvironmentTemplateGetAny(ctx, rt.pool, db.EnvironmentTemplateGetAnyParams{WorkspaceID: workspaceID, ID: templateID})
	if dbx.IsNotFound(err) {
		return Acquired{}, &Unusable{"the agent's environment template no longer exists"}
	}
	if err != nil {
		return Acquired{}, fmt.Errorf("read environment template: %w", err)
	}
	if !tpl.Enabled {
		return Acquired{}, &Unusable{"the environment template is disabled"}
	}
	prv, err := rt.q.ProviderGetAny(ctx, rt.pool, tpl.ProviderID)
	if err != nil {
		return Acquired{}, fmt.Errorf("read environment provider: %w", err)
	}
	if !prv.Enabled {
		return Acquired{}, &Unusable{"the environment provider is disabled"}
	}
	drv, ok := rt.drivers[prv.Type]
	if !ok {
		return Acquired{}, &Unusable{fmt.Sprintf("environments of type %s cannot run on this deployment", prv.Type)}
	}
	spec, err := rt.spec(prv, tpl.Config, "", workspaceID)
	if err != nil {
		return Acquired{}, err
	}
	th, err := rt.q.ThreadGet(ctx, rt.pool, db.ThreadGetParams{WorkspaceID: workspaceID, ID: threadID})
	if err != nil {
		return Acquired{}, fmt.Errorf("read thread: %w", err)
	}
	if th.EnvironmentID != nil {
		env, err := rt.q.EnvironmentGet(ctx, rt.pool, db.EnvironmentGetParams{WorkspaceID: workspaceID, ID: *th.EnvironmentID})
		if err != nil {
			return Acquired{}, fmt.Errorf("read environment: %w", err)
		}
		if env.TemplateID == templateID && (env.Status == string(StatusRunning) || env.Status == string(StatusStopped)) {
			h, err := rt.handle(env.ID, env.VendorHandle)
			if err != nil {
				return Acquired{}, err
			}
			spec.EnvironmentID = env.ID
			inst, err := drv.Open(ctx, spec, h)
			if err == nil {
				if env.Status == string(StatusStopped) {
					if err := rt.q.EnvironmentSetRunning(ctx, rt.pool, db.EnvironmentSetRunningParams{ID: env.ID, VendorHandle: env.VendorHandle}); err != nil {
						return Acquired{}, err
					}
				} else if err := rt.q.EnvironmentTouch(ctx, rt.pool, env.ID); err != nil {
					return Acquired{}, err
				}
				return Acquired{ID: env.ID, Instance: inst}, nil
			}
			if !errors.Is(err, sandbox.ErrGone) {
				return Acquired{}, fmt.Errorf("open environment %s: %w", env.ID, err)
			}
			rt.log.Info("environment gone at the vendor; making a new one", "environment_id", env.ID)
			if err := rt.q.EnvironmentSetState(ctx, rt.pool, db.EnvironmentSetStateParams{ID: env.ID, Status: string(StatusDeleted)}); err != nil {
				return Acquired{}, err
			}
		}
	}
	return rt.create(ctx, drv, spec, tpl, th, principalID)
}

// create makes a new environment for the thread: the row first (starting),
// so a maker that dies leaves a row the sweep cleans up, then the vendor's
// instance, then the sealed handle.
func (rt *Runtime) create(ctx context.Context, drv sandbox.Driver, spec sandbox.Spec, tpl db.EnvironmentTemplate, th db.Thread, principalID string) (Acquired, error) {
	env, err := rt.q.EnvironmentInsertForThread(ctx, rt.pool, db.EnvironmentInsertForThreadParams{
		ID: id.New(id.Environment), WorkspaceID: tpl.WorkspaceID, TemplateID: tpl.ID, ProviderID: tpl.ProviderID,
		ThreadID: &th.ID, CreatedByID: principalID,
	})
	if err != nil {
		return Acquired{}, fmt.Errorf("record environment: %w", err)
	}
	spec.EnvironmentID = env.ID
	h, err := drv.Create(ctx, spec)
	if err != nil {
		_ = rt.q.EnvironmentSetState(context.WithoutCancel(ctx), rt.pool, db.EnvironmentSetStateParams{ID: env.ID, Status: string(StatusFailed)})
		return Acquired{}, &Unusable{fmt.Sprintf("the environment could not be made: %v", err)}
	}
	sealed, err := rt.seal(env.ID, h)
	if err != nil {
		return Acquired{}, err
	}
	if err := rt.q.EnvironmentSetRunning(ctx, rt.pool, db.EnvironmentSetRunningParams{ID: env.ID, VendorHandle: sealed}); err != nil {
		return Acquired{}, err
	}
	if err := rt.q.ThreadSetEnvironment(ctx, rt.pool, db.ThreadSetEnvironmentParams{ID: th.ID, EnvironmentID: &env.ID}); err != nil {
		return Acquired{}, err
	}
	inst, err := drv.Open(ctx, spec, h)
	if err != nil {
		return Acquired{}, fmt.Errorf("open new environment %s: %w", env.ID, err)
	}
	return Acquired{ID: env.ID, Instance: inst}, nil
}

// storedHandle is the JSON on the row: the driver's handle, sealed bound to
// the environment's id.
type storedHandle struct {
	Sealed []byte `json:"sealed"`
}

func (rt *Runtime) seal(envID string, h sandbox.Handle) ([]byte, error) {
	sealed, err := secret.Seal(rt.ring, envID, json.RawMessage(h))
	if err != nil {
		return nil, fmt.Errorf("seal environment handle: %w", err)
	}
	return json.Marshal(storedHandle{Sealed: sealed})
}

func (rt *Runtime) handle(envID string, stored []byte) (sandbox.Handle, error) {
	var sh storedHandle
	if err := json.Unmarshal(stored, &sh); err != nil || sh.Sealed == nil {
		return nil, fmt.Errorf("environment %s has no readable handle", envID)
	}
	var raw json.RawMessage
	if err := secret.Open(rt.ring, envID, sh.Sealed, &raw); err != nil {
		return nil, err
	}
	return sandbox.Handle(raw), nil
}

// spec is what a driver needs of provider p and a template's config.
func (rt *Runtime) spec(p db.Provider, template json.RawMessage, envID, workspaceID string) (sandbox.Spec, error) {
	var cred map[string]any
	if err := secret.Open(rt.ring, p.ID, p.Credential, &cred); err != nil {
		return sandbox.Spec{}, fmt.Errorf("open the credential of provider %s: %w", p.ID, err)
	}
	s := sandbox.Spec{EnvironmentID: envID, WorkspaceID: workspaceID, Provider: p.Config, Template: template}
	if cred != nil {
		b, err := json.Marshal(cred)
		if err != nil {
			return sandbox.Spec{}, err
		}
		s.Credential = b
	}
	return s, nil
}

// Touch records a use of environment envID, for the idle thresholds.
func (rt *Runtime) Touch(ctx context.Context, envID string) error {
	return rt.q.EnvironmentTouch(ctx, rt.pool, envID)
}

// MaintainBatch is how many environments one maintain pass handles.
const MaintainBatch = 50

// Maintain is the maintain_environments sweep: it destroys environments
// being deleted, idle past their template's idle_delete_seconds, or left
// starting by a maker that disappeared, and stops those idle past
// idle_stop_seconds (types that cannot stop are destroyed instead).
// Environments of disabled providers are maintained too. Each vendor call is
// bounded by the renewal time; a failed one is retried at the next pass.
//
// No transaction is open during a vendor call: the sweep reads its
// candidates, calls the vendor, then records each outcome in a short
// transaction, only if the environment is still in the state it read (a
// run may have reopened it meanwhile).
func (rt *Runtime) Maintain(ctx context.Context) (int, error) {
	rows, err := rt.q.EnvironmentsToMaintain(ctx, rt.pool, MaintainBatch)
	if err != nil {
		return 0, err
	}
	done := 0
	for _, e := range rows {
		ok, err := rt.maintainOne(ctx, e)
		if err != nil {
			return done, err
		}
		if ok {
			done++
		}
	}
	return done, nil
}

func (rt *Runtime) maintainOne(ctx context.Context, e db.EnvironmentsToMaintainRow) (bool, error) {
	p, err := rt.q.ProviderGetAny(ctx, rt.pool, e.ProviderID)
	if err != nil {
		return false, err
	}
	drv, ok := rt.drivers[p.Type]
	log := rt.log.With("environment_id", e.ID, "type", p.Type)
	if !ok {
		log.Warn("environment of a type this build cannot run is left as it is")
		return false, nil
	}
	spec, err := rt.spec(p, e.TemplateConfig, e.ID, e.WorkspaceID)
	if err != nil {
		return false, err
	}
	var h sandbox.Handle
	if len(e.VendorHandle) > 0 {
		if h, err = rt.handle(e.ID, e.VendorHandle); err != nil {
			return false, err
		}
	}
	callCtx, cancel := context.WithTimeout(ctx, rt.renewal)
	defer cancel()
	action := e.Action
	if action == "stop" {
		err = drv.Stop(callCtx, spec, h)
		if errors.Is(err, sandbox.ErrUnsupported) {
			action = "destroy"
		} else if errors.Is(err, sandbox.ErrGone) {
			action, err = "destroy", nil
		}
	}
	status, event := StatusStopped, webhook.EnvironmentStopped
	if action == "destroy" {
		status, event = StatusDeleted, webhook.EnvironmentDeleted
		if h != nil {
			err = drv.Destroy(callCtx, spec, h)
		}
	}
	if err != nil {
		log.Warn("environment maintenance failed; retried at the next pass", "action", action, "error", err.Error())
		return false, nil
	}
	changed := false
	err = pgx.BeginFunc(ctx, rt.pool, func(tx pgx.Tx) error {
		n, err := rt.q.EnvironmentSetStateFrom(ctx, tx, db.EnvironmentSetStateFromParams{ID: e.ID, FromStatus: e.Status, Status: string(status)})
		if err != nil || n == 0 {
			return err
		}
		changed = true
		return webhook.Emit(ctx, tx, e.WorkspaceID, webhook.Event{Type: event, Data: map[string]any{
			"environment_id": e.ID, "template_id": e.TemplateID, "thread_id": e.ThreadID,
		}})
	})
	if err != nil || !changed {
		return false, err
	}
	log.Info("environment maintained", "status", string(status))
	return true, nil
}

// Renew is the renew_environments sweep: it extends the life of running
// environments in use whose vendor ends instances on a timer, each call
// bounded by environments.renewal_seconds.
func (rt *Runtime) Renew(ctx context.Context, renewable []string) (int, error) {
	rows, err := rt.q.EnvironmentsToRenew(ctx, rt.pool, db.EnvironmentsToRenewParams{Types: renewable, PageLimit: MaintainBatch})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range rows {
		drv, ok := rt.drivers[e.ProviderType]
		if !ok {
			continue
		}
		p, err := rt.q.ProviderGetAny(ctx, rt.pool, e.ProviderID)
		if err != nil {
			return n, err
		}
		spec, err := rt.spec(p, e.TemplateConfig, e.ID, e.WorkspaceID)
		if err != nil {
			return n, err
		}
		h, err := rt.handle(e.ID, e.VendorHandle)
		if err != nil {
			rt.log.Warn("environment handle unreadable; not renewed", "environment_id", e.ID, "error", err.Error())
			continue
		}
		callCtx, cancel := context.WithTimeout(ctx, rt.renewal)
		err = drv.Renew(callCtx, spec, h)
		cancel()
		switch {
		case errors.Is(err, sandbox.ErrGone):
			if err := rt.q.EnvironmentSetState(ctx, rt.pool, db.EnvironmentSetStateParams{ID: e.ID, Status: string(StatusDeleted)}); err != nil {
				return n, err
			}
		case errors.Is(err, sandbox.ErrUnsupported):
		case err != nil:
			rt.log.Warn("environment renewal failed; retried at the next pass", "environment_id", e.ID, "error", err.Error())
		default:
			n++
		}
	}
	return n, nil
}
