package environment_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apitest"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/environment"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/sandbox"
	"github.com/svcdev/svc/internal/secret"
	"github.com/svcdev/svc/internal/testdb"
	"github.com/svcdev/svc/internal/testfactory"
)

// fakeDriver is a vendor that keeps its instances in memory. Handles are
// numbered in the order the instances were made ("#1", "#2"...) and carry a
// vendor token, as real ones may.
type fakeDriver struct {
	mu    sync.Mutex
	made  int
	calls []string
	specs []sandbox.Spec
	// gone are the instances the vendor has lost, by number.
	gone map[int]bool

	createErr, stopErr, destroyErr, renewErr error
}

var _ sandbox.Driver = (*fakeDriver)(nil)

type fakeHandle struct {
	N     int    `json:"n"`
	Token string `json:"token"`
}

func (d *fakeDriver) note(call string, spec sandbox.Spec, h sandbox.Handle) {
	if h != nil {
		var fh fakeHandle
		if err := json.Unmarshal(h, &fh); err != nil {
			panic(err)
		}
		call += fmt.Sprintf(" #%d", fh.N)
	}
	d.calls = append(d.calls, call)
	d.specs = append(d.specs, spec)
}

func (d *fakeDriver) Create(_ context.Context, spec sandbox.Spec) (sandbox.Handle, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.note("create", spec, nil)
	if d.createErr != nil {
		return nil, d.createErr
	}
	d.made++
	h, err := json.Marshal(fakeHandle{N: d.made, Token: fmt.Sprintf("vendor-token-%d", d.made)})
	return sandbox.Handle(h), err
}

func (d *fakeDriver) Open(_ context.Context, spec sandbox.Spec, h sandbox.Handle) (sandbox.Instance, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.note("open", spec, h)
	var fh fakeHandle
	_ = json.Unmarshal(h, &fh)
	if d.gone[fh.N] {
		return nil, fmt.Errorf("open: %w", sandbox.ErrGone)
	}
	return fakeInstance{}, nil
}

func (d *fakeDriver) Stop(_ context.Context, spec sandbox.Spec, h sandbox.Handle) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.note("stop", spec, h)
	return d.stopErr
}

func (d *fakeDriver) Destroy(_ context.Context, spec sandbox.Spec, h sandbox.Handle) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.note("destroy", spec, h)
	return d.destroyErr
}

func (d *fakeDriver) Renew(_ context.Context, spec sandbox.Spec, h sandbox.Handle) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.note("renew", spec, h)
	return d.renewErr
}

func (d *fakeDriver) set(f func(d *fakeDriver)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f(d)
}

// took returns the calls made since the last took.
func (d *fakeDriver) took() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.calls
	d.calls = nil
	return out
}

type fakeInstance struct{}

func (fakeInstance) Run(context.Context, sandbox.Command) (sandbox.Result, error) {
	return sandbox.Result{}, nil
}
func (fakeInstance) ReadFile(context.Context, string, int64) (sandbox.File, error) {
	return sandbox.File{}, nil
}
func (fakeInstance) WriteFile(context.Context, string, []byte) error       { return nil }
func (fakeInstance) List(context.Context, string) ([]sandbox.Entry, error) { return nil, nil }
func (fakeInstance) Close() error                                          { return nil }

type runtimeBundle struct {
	pool  *pgxpool.Pool
	admin testfactory.Admin
	owner testfactory.Owner
	rt    *environment.Runtime
	svc   *environment.Service
	// docker's instances stop; modal's cannot (ErrUnsupported).
	docker, modal *fakeDriver
	dockerPrv     string
	modalPrv      string
}

func setupRuntime(t *testing.T) *runtimeBundle {
	t.Helper()
	pool := testdb.New(t)
	admin := testfactory.Bootstrap(t, pool)
	path := filepath.Join(t.TempDir(), "ring.json")
	require.NoError(t, keyring.Generate(path))
	ring, err := keyring.Load(path)
	require.NoError(t, err)
	dockerPrv := id.New(id.Provider)
	cred, err := secret.Seal(ring, dockerPrv, map[string]string{"tls_key": "PEM"})
	require.NoError(t, err)
	testfactory.Provider(t, pool, admin.Owner(), &testfactory.ProviderOpts{ID: dockerPrv, Kind: "environment", Type: "docker",
		Config: json.RawMessage(`{"host":"unix:///run/engine.sock"}`), Credential: cred})
	modalPrv := testfactory.Provider(t, pool, admin.Owner(), &testfactory.ProviderOpts{Kind: "environment", Type: "modal"}).ID
	docker, modal := &fakeDriver{}, &fakeDriver{stopErr: fmt.Errorf("stop: %w", sandbox.ErrUnsupported)}
	rt := environment.NewRuntime(pool, ring, map[string]sandbox.Driver{"docker": docker, "modal": modal}, time.Minute,
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	return &runtimeBundle{pool: pool, admin: admin, owner: admin.Owner(), rt: rt, svc: environment.NewService(pool),
		docker: docker, modal: modal, dockerPrv: dockerPrv, modalPrv: modalPrv}
}

// template makes a template on providerID with the given idle thresholds.
func (b *runtimeBundle) template(t *testing.T, providerID string, stop, del int32) string {
	t.Helper()
	return testfactory.EnvironmentTemplate(t, b.pool, b.owner, &testfactory.EnvironmentTemplateOpts{ProviderID: providerID,
		Config: json.RawMessage(`{"image":"alpine:3.21"}`), IdleStopSeconds: stop, IdleDeleteSeconds: del}).ID
}

func (b *runtimeBundle) thread(t *testing.T) string {
	t.Helper()
	return testfactory.Thread(t, b.pool, b.owner, nil).ID
}

func (b *runtimeBundle) acquire(t *testing.T, threadID, templateID string) string {
	t.Helper()
	a, err := b.rt.Acquire(t.Context(), b.owner.WorkspaceID, threadID, templateID, b.owner.PrincipalID)
	require.NoError(t, err)
	require.NotNil(t, a.Instance)
	return a.ID
}

func (b *runtimeBundle) status(t *testing.T, envID string) environment.Status {
	t.Helper()
	e, err := b.svc.Get(t.Context(), b.admin.Caller(auth.RoleViewer), envID)
	require.NoError(t, err)
	return e.Status
}

// idle makes an environment's last use ago in the past: the thresholds are
// minutes at least, so the test moves the row's clock, not its own.
func (b *runtimeBundle) idle(t *testing.T, envID string, ago time.Duration) {
	t.Helper()
	_, err := b.pool.Exec(t.Context(), `UPDATE environment SET last_used_at = now() - make_interval(secs => $2) WHERE id = $1`, envID, ago.Seconds())
	require.NoError(t, err)
}

// events are the webhook events queued for the subscriber, in order.
// events answers the event types of the webhook deliveries written so far,
// and checks each delivery's body (what is POSTed) against the contract's
// WebhookEvent and its type's own schema.
func (b *runtimeBundle) events(t *testing.T) []string {
	t.Helper()
	rows, err := b.pool.Query(t.Context(), `SELECT event_type, payload FROM outbox WHERE kind = 'webhook' ORDER BY created_at, id`)
	require.NoError(t, err)
	mapping := apitest.Contract(t).Components.Schemas["WebhookEvent"].Value.Discriminator.Mapping
	var out []string
	for rows.Next() {
		var s string
		var payload []byte
		require.NoError(t, rows.Scan(&s, &payload))
		apitest.CheckSchema(t, "WebhookEvent", payload)
		apitest.CheckSchema(t, strings.TrimPrefix(mapping[s].Ref, "#/components/schemas/"), payload)
		out = append(out, s)
	}
	require.NoError(t, rows.Err())
	return out
}

func TestRuntimeAcquire(t *testing.T) {
	t.Parallel()

	t.Run("MakesOnFirstUseThenReuses", func(t *testing.T) {
		t.Parallel()
		b := setupRuntime(t)
		tpl := b.template(t, b.dockerPrv, 0, 0)
		th := b.thread(t)

		first := b.acquire(t, th, tpl)
		require.Equal(t, []string{"create", "open #1"}, b.docker.took())
		require.Equal(t, environment.StatusRunning, b.status(t, first))
		spec := b.docker.specs[0]
		require.Equal(t, first, spec.EnvironmentID)
		require.Equal(t, b.owner.WorkspaceID, spec.WorkspaceID)
		require.JSONEq(t, `{"image":"alpine:3.21"}`, string(spec.Template))
		require.JSONEq(t, `{"host":"unix:///run/engine.sock"}`, string(spec.Provider))
		require.JSONEq(t, `{"tls_key":"PEM"}`, string(spec.Credential), "the credential reaches the driver opened")
		var stored []byte
		require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT vendor_handle::text FROM environment WHERE id = $1`, first).Scan(&stored))
		require.NotContains(t, string(stored), "vendor-token-1", "the vendor's handle is stored sealed")

		again := b.acquire(t, th, tpl)
		require.Equal(t, first, again, "the thread's environment is reused")
		require.Equal(t, []string{"open #1"}, b.docker.took())

		other := b.acquire(t, b.thread(t), tpl)
		require.NotEqual(t, first, other, "another thread gets its own")
		require.Equal(t, []string{"create", "open #2"}, b.docker.took())
	})

	t.Run("ReopensAStoppedOne", func(t *testing.T) {
		t.Parallel()
		b := setupRuntime(t)
		tpl := b.template(t, b.dockerPrv, 60, 0)
		th := b.thread(t)
		envID := b.acquire(t, th, tpl)
		b.idle(t, envID, 2*time.Minute)
		n, err := b.rt.Maintain(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.Equal(t, environment.StatusStopped, b.status(t, envID))
		b.docker.took()

		require.Equal(t, envID, b.acquire(t, th, tpl))
		require.Equal(t, []string{"open #1"}, b.docker.took())
		require.Equal(t, environment.StatusRunning, b.status(t, envID))
	})

	t.Run("ReplacesOneTheVendorLost", func(t *testing.T) {
		t.Parallel()
		b := setupRuntime(t)
		tpl := b.template(t, b.dockerPrv, 0, 0)
		th := b.thread(t)
		lost := b.acquire(t, th, tpl)
		b.docker.set(func(d *fakeDriver) { d.gone = map[int]bool{1: true} })
		b.docker.took()

		made := b.acquire(t, th, tpl)
		require.NotEqual(t, lost, made)
		require.Equal(t, []string{"open #1", "create", "open #2"}, b.docker.took())
		require.Equal(t, environment.StatusDeleted, b.status(t, lost))
		require.Equal(t, made, b.acquire(t, th, tpl), "the thread now uses the new one")
	})

	t.Run("RefusesWhatCannotBeUsed", func(t *testing.T) {
		t.Parallel()
		b := setupRuntime(t)
		disabledPrv := testfactory.Provider(t, b.pool, b.owner, &testfactory.ProviderOpts{Kind: "environment", Type: "docker", Disabled: true}).ID
		noDriver := testfactory.Provider(t, b.pool, b.owner, &testfactory.ProviderOpts{Kind: "environment", Type: "e2b"}).ID
		other := testfactory.Owner{
			WorkspaceID: testfactory.Workspace(t, b.pool, b.admin.OrganizationID, b.admin.PrincipalID, nil).ID,
			PrincipalID: b.admin.PrincipalID,
		}
		for _, tc := range []struct {
			name, templateID, reason string
		}{
			{"an absent template", "et_01jd5v6w1q3yb8j8y3tn9z2k7h", "the agent's environment template no longer exists"},
			{"another workspace's template", testfactory.EnvironmentTemplate(t, b.pool, other, nil).ID, "the agent's environment template no longer exists"},
			{"a disabled template", testfactory.EnvironmentTemplate(t, b.pool, b.owner, &testfactory.EnvironmentTemplateOpts{
				ProviderID: b.dockerPrv, Disabled: true}).ID, "the environment template is disabled"},
			{"a disabled provider", b.template(t, disabledPrv, 0, 0), "the environment provider is disabled"},
			{"a type without a driver here", b.template(t, noDriver, 0, 0), "environments of type e2b cannot run on this deployment"},
		} {
			_, err := b.rt.Acquire(t.Context(), b.owner.WorkspaceID, b.thread(t), tc.templateID, b.owner.PrincipalID)
			var unusable *environment.Unusable
			require.ErrorAs(t, err, &unusable, tc.name)
			require.Equal(t, tc.reason, unusable.Reason, tc.name)
		}
		require.Empty(t, b.docker.took(), "no vendor was asked")
		page, err := b.svc.List(t.Context(), b.admin.Caller(auth.RoleViewer), environment.ListInput{})
		require.NoError(t, err)
		require.Empty(t, page.Items)
	})

	t.Run("AFailedMakeIsRecordedAndTriedAgain", func(t *testing.T) {
		t.Parallel()
		b := setupRuntime(t)
		tpl := b.template(t, b.dockerPrv, 0, 0)
		th := b.thread(t)
		b.docker.set(func(d *fakeDriver) { d.createErr = errors.New("quota exceeded") })
		_, err := b.rt.Acquire(t.Context(), b.owner.WorkspaceID, th, tpl, b.owner.PrincipalID)
		var unusable *environment.Unusable
		require.ErrorAs(t, err, &unusable)
		require.Equal(t, "the environment could not be made: quota exceeded", unusable.Reason)
		page, err := b.svc.List(t.Context(), b.admin.Caller(auth.RoleViewer), environment.ListInput{})
		require.NoError(t, err)
		require.Len(t, page.Items, 1)
		require.Equal(t, environment.StatusFailed, page.Items[0].Status)

		b.docker.set(func(d *fakeDriver) { d.createErr = nil })
		made := b.acquire(t, th, tpl)
		require.NotEqual(t, page.Items[0].ID, made)
		require.Equal(t, environment.StatusRunning, b.status(t, made))
	})
}

func TestRuntimeMaintain(t *testing.T) {
	t.Parallel()
	b := setupRuntime(t)
	ctx := t.Context()
	testfactory.Subscription(t, b.pool, b.owner, &testfactory.SubscriptionOpts{
		EventTypes: []string{"environment.stopped", "environment.deleted"}})
	stops := b.template(t, b.dockerPrv, 60, 3600)
	// The API refuses a stop threshold on a type that cannot stop; should
	// a template have one all the same, its idle instances are destroyed.
	modal := b.template(t, b.modalPrv, 60, 0)

	fresh := b.acquire(t, b.thread(t), stops)
	idle := b.acquire(t, b.thread(t), stops)
	b.idle(t, idle, 2*time.Minute)
	abandoned := b.acquire(t, b.thread(t), stops)
	b.idle(t, abandoned, 2*time.Hour)
	asked := b.acquire(t, b.thread(t), stops)
	require.NoError(t, b.svc.Delete(ctx, b.admin.Caller(auth.RoleEditor), asked, ptr("*")))
	onModal := b.acquire(t, b.thread(t), modal)
	b.idle(t, onModal, 2*time.Minute)
	b.docker.took()
	b.modal.took()

	// A vendor that fails leaves the environment for the next pass.
	b.docker.set(func(d *fakeDriver) { d.destroyErr = errors.New("vendor down") })
	n, err := b.rt.Maintain(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n, "the stop and modal's destroy")
	require.Equal(t, environment.StatusStopped, b.status(t, idle))
	require.Equal(t, environment.StatusDeleted, b.status(t, onModal))
	require.Equal(t, environment.StatusRunning, b.status(t, abandoned), "its destroy failed")
	require.Equal(t, environment.StatusDeleting, b.status(t, asked), "its destroy failed")
	require.Equal(t, environment.StatusRunning, b.status(t, fresh))
	require.Equal(t, []string{"stop #1", "destroy #1"}, b.modal.took())
	calls := b.docker.took()
	slices.Sort(calls)
	require.Equal(t, []string{"destroy #3", "destroy #4", "stop #2"}, calls)

	b.docker.set(func(d *fakeDriver) { d.destroyErr = nil })
	n, err = b.rt.Maintain(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, environment.StatusDeleted, b.status(t, abandoned))
	require.Equal(t, environment.StatusDeleted, b.status(t, asked))
	calls = b.docker.took()
	slices.Sort(calls)
	require.Equal(t, []string{"destroy #3", "destroy #4"}, calls)
	require.Equal(t, environment.StatusRunning, b.status(t, fresh), "used within its thresholds")

	n, err = b.rt.Maintain(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "nothing left to do")
	events := b.events(t)
	slices.Sort(events)
	require.Equal(t, []string{"environment.deleted", "environment.deleted", "environment.deleted", "environment.stopped"}, events)
}

func TestRuntimeRenew(t *testing.T) {
	t.Parallel()
	b := setupRuntime(t)
	ctx := t.Context()
	tpl := b.template(t, b.dockerPrv, 0, 0)
	used := b.acquire(t, b.thread(t), tpl)
	unused := b.acquire(t, b.thread(t), tpl)
	b.idle(t, unused, 2*time.Hour)
	onModal := b.acquire(t, b.thread(t), b.template(t, b.modalPrv, 0, 0))
	b.docker.took()
	b.modal.took()

	n, err := b.rt.Renew(ctx, []string{"docker"})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, []string{"renew #1"}, b.docker.took(), "only what was used lately, only of the renewable types")
	require.Empty(t, b.modal.took())

	b.docker.set(func(d *fakeDriver) { d.renewErr = fmt.Errorf("renew: %w", sandbox.ErrUnsupported) })
	n, err = b.rt.Renew(ctx, []string{"docker"})
	require.NoError(t, err)
	require.Zero(t, n)

	b.docker.set(func(d *fakeDriver) { d.renewErr = fmt.Errorf("renew: %w", sandbox.ErrGone) })
	n, err = b.rt.Renew(ctx, []string{"docker"})
	require.NoError(t, err)
	require.Zero(t, n)
	require.Equal(t, environment.StatusDeleted, b.status(t, used), "the vendor ended it")
	require.Equal(t, environment.StatusRunning, b.status(t, unused))
	require.Equal(t, environment.StatusRunning, b.status(t, onModal))
}
