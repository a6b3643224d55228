package docker

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/environment"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/sandbox"
	"github.com/svcdev/svc/internal/testdb"
	"github.com/svcdev/svc/internal/testfactory"
)

// TestRowsWrittenAroundTheAPIAreRefusedWhenTheContainerIsMade: a provider
// naming the host network and a template running as root, written straight
// to the database (saved under a laxer configuration, or by hand), are
// refused by the driver before the engine makes anything: the environment
// is unusable and failed, and no container exists.
func TestRowsWrittenAroundTheAPIAreRefusedWhenTheContainerIsMade(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	admin := testfactory.Bootstrap(t, pool)
	ctx := t.Context()
	eng := startFakeEngine(t)
	ws, pri := admin.WorkspaceID, admin.PrincipalID
	thread := testfactory.Thread(t, pool, admin.Owner(), nil).ID

	// Written by the factories, not the services: these configurations are
	// what the API refuses.
	template := func(providerCfg, templateCfg string) string {
		return testfactory.EnvironmentTemplate(t, pool, admin.Owner(), &testfactory.EnvironmentTemplateOpts{
			Provider: &testfactory.ProviderOpts{Type: "docker", Config: json.RawMessage(providerCfg)},
			Config:   json.RawMessage(templateCfg),
		}).ID
	}
	host := `"host":"unix://` + eng.Socket + `"`

	path := filepath.Join(t.TempDir(), "ring.json")
	require.NoError(t, keyring.Generate(path))
	ring, err := keyring.Load(path)
	require.NoError(t, err)
	driver := New(&endpoint.Policy{AllowedSockets: []string{eng.Socket}}, Options{CallTimeout: 5 * time.Second})
	rt := environment.NewRuntime(pool, ring, map[string]sandbox.Driver{"docker": driver}, time.Minute, slog.New(slog.NewTextHandler(io.Discard, nil)))

	for name, tc := range map[string]struct{ provider, template, want string }{
		"host network":      {`{` + host + `,"network":"host"}`, `{"image":"alpine:3.21","user":"1000"}`, KeyNetworks},
		"container network": {`{` + host + `,"network":"container:svc-env_other"}`, `{"image":"alpine:3.21","user":"1000"}`, KeyNetworks},
		"root user":         {`{` + host + `}`, `{"image":"alpine:3.21","user":"0:0"}`, KeyAllowRoot},
		"root image":        {`{` + host + `}`, `{"image":"alpine:3.21"}`, KeyAllowRoot},
	} {
		_, err := rt.Acquire(ctx, ws, thread, template(tc.provider, tc.template), pri)
		var unusable *environment.Unusable
		require.True(t, errors.As(err, &unusable), "%s: %v", name, err)
		require.Contains(t, unusable.Reason, tc.want, name)
	}
	require.NotContains(t, strings.Join(eng.Requests(), " "), "POST /containers/create", "the engine made no container")
	var failed int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM environment WHERE status = 'failed'`).Scan(&failed))
	require.Equal(t, 4, failed)

	// The same rows with a numeric non-root user and no network are made.
	acquired, err := rt.Acquire(ctx, ws, thread, template(`{`+host+`}`, `{"image":"alpine:3.21","user":"1000:1000"}`), pri)
	require.NoError(t, err)
	require.NoError(t, acquired.Instance.Close())
}
