package app_test

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/client"
	"github.com/svcdev/svc/internal/apitest"
	"github.com/svcdev/svc/internal/app"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/objectstore/objectstoretest"
)

// s3Config points cfg at a new bucket of the test S3 server through a proxy
// the test can cut.
func s3Config(t *testing.T, cfg *config.Config) *apitest.Proxy {
	t.Helper()
	s3 := objectstoretest.S3Config(t)
	proxy := apitest.NewProxy(t, s3.Endpoint)
	cfg.ObjectStore = config.ObjectStore{
		URL: "s3://" + s3.Bucket + "/svc", Endpoint: proxy.Addr(), Region: s3.Region,
		AccessKeyID: s3.AccessKeyID, SecretAccessKey: s3.SecretAccessKey, UseTLS: false, PathStyle: true,
	}
	return proxy
}

func readiness(t *testing.T, h *apitest.Harness) (int, []client.ReadinessDegraded) {
	t.Helper()
	r, err := h.API.GetReadinessWithResponse(t.Context())
	require.NoError(t, err)
	if r.JSON200 == nil || r.JSON200.Degraded == nil {
		return r.StatusCode(), nil
	}
	return r.StatusCode(), *r.JSON200.Degraded
}

// TestObjectStoreOutageDegradesAndRecovers: /readyz checks the object store
// on every probe. Readiness depends on the runtime and the database only
// (docs/decisions/0002-health-and-readiness.md), so a lost store stays 200 and is listed under degraded,
// then drops out of the list when it answers again.
func TestObjectStoreOutageDegradesAndRecovers(t *testing.T) {
	t.Parallel()
	var proxy *apitest.Proxy
	h := apitest.Start(t, apitest.Options{Configure: func(c *config.Config) {
		proxy = s3Config(t, c)
		c.Server.ReadinessTimeout = 500 * time.Millisecond
	}})
	status, degraded := readiness(t, h)
	require.Equal(t, http.StatusOK, status)
	require.Empty(t, degraded)

	proxy.Cut()
	start := time.Now()
	status, degraded = readiness(t, h)
	require.Equal(t, http.StatusOK, status, "losing the object store never makes the process unready")
	require.Equal(t, []client.ReadinessDegraded{client.ReadinessDegradedObjectStore}, degraded)
	require.Less(t, time.Since(start), 3*time.Second, "the probe answers within the readiness time-out")
	require.Contains(t, h.Logs.String(), "the object store is unavailable")

	proxy.Restore()
	eventually(t, 10*time.Second, "readyz recovers when the object store returns", func() bool {
		status, degraded := readiness(t, h)
		return status == http.StatusOK && len(degraded) == 0
	})
	require.Contains(t, h.Logs.String(), "the object store is available again")
}

// TestFileObjectStoreOutage: a file store whose directory is gone is degraded.
func TestFileObjectStoreOutage(t *testing.T) {
	t.Parallel()
	h := apitest.Start(t, apitest.Options{})
	dir := strings.TrimPrefix(h.Config.ObjectStore.URL, "file://")
	require.NoError(t, os.RemoveAll(dir))
	status, degraded := readiness(t, h)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, []client.ReadinessDegraded{client.ReadinessDegradedObjectStore}, degraded)
	require.NoError(t, os.MkdirAll(dir, 0o750))
	status, degraded = readiness(t, h)
	require.Equal(t, http.StatusOK, status)
	require.Empty(t, degraded)
}

// TestStartRefusesAnUnusableObjectStore: a missing bucket, wrong keys or an
// unreachable server are configuration errors, reported at start with the
// key to fix and without the secret.
func TestStartRefusesAnUnusableObjectStore(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		mutate func(c *config.Config)
		want   string
	}{
		{"MissingBucket", func(c *config.Config) {
			c.ObjectStore.URL = strings.TrimSuffix(c.ObjectStore.URL, "/svc") + "-missing/svc"
		}, "the bucket does not exist"},
		{"WrongSecret", func(c *config.Config) { c.ObjectStore.SecretAccessKey = "wrong-secret-value" }, "object_store.url"},
		{"Unreachable", func(c *config.Config) { c.ObjectStore.Endpoint = "127.0.0.1:1" }, "object_store.url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := apitest.Config(t)
			s3Config(t, cfg)
			tc.mutate(cfg)
			cfg.Database.ConnectTimeout = 3 * time.Second
			a, err := app.New(context.Background(), cfg, app.RoleAll, slog.New(slog.DiscardHandler))
			require.NoError(t, err)
			err = a.Start(context.Background())
			_ = a.Shutdown()
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.NotContains(t, err.Error(), "wrong-secret-value")
		})
	}
}
