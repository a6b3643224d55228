package config

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestProductionExample loads docs/examples/production.toml as svc does and
// checks that it says what its comments say: an S3 object store, the proxy's
// https public_url, a strict endpoint policy, metrics apart from the API, and
// secrets left to the environment, which overrides the file per process.
func TestProductionExample(t *testing.T) {
	t.Parallel()
	_, here, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(here), "..", "..", "docs", "examples", "production.toml")

	cfg, err := Load(path, nil)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:8080", cfg.Server.Listen)
	require.Equal(t, "https://agents.example.com", cfg.Server.PublicURL)
	require.Equal(t, []string{"127.0.0.1/32", "::1/128"}, cfg.Server.TrustedProxies)
	require.Equal(t, "s3://svc-assets-example/production", cfg.ObjectStore.URL)
	require.True(t, cfg.ObjectStore.UseTLS)
	require.False(t, cfg.ObjectStore.PathStyle)
	require.Empty(t, cfg.ObjectStore.SecretAccessKey, "secrets stay out of the file")
	require.Empty(t, cfg.Mail.SMTPPassword, "secrets stay out of the file")
	require.Equal(t, "smtp", cfg.Mail.Transport)
	require.Equal(t, Default().EndpointPolicy, cfg.EndpointPolicy, "the production policy is the strict default")
	require.False(t, cfg.Environments.LocalEnabled)
	require.False(t, cfg.Database.AutoMigrate)
	require.Equal(t, "127.0.0.1:9090", cfg.Metrics.Listen)
	require.Equal(t, "/etc/svc/keyring.json", cfg.Encryption.KeyFile)
	require.Equal(t, "json", cfg.Log.Format)

	// A worker on the same host as a control process: its own addresses and
	// the secrets come from its environment.
	cfg, err = Load(path, []string{
		"SVC_SERVER__LISTEN=127.0.0.1:8081",
		"SVC_METRICS__LISTEN=127.0.0.1:9091",
		"SVC_DATABASE__URL=postgres://svc:s3cret@db.internal.example.com:5432/svc?sslmode=verify-full",
		"SVC_OBJECT_STORE__ACCESS_KEY_ID=AKIAEXAMPLE",
		"SVC_OBJECT_STORE__SECRET_ACCESS_KEY=secret-example",
		"SVC_MAIL__SMTP_PASSWORD=smtp-example",
	})
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:8081", cfg.Server.Listen)
	require.Equal(t, "127.0.0.1:9091", cfg.Metrics.Listen)
	require.Equal(t, "AKIAEXAMPLE", cfg.ObjectStore.AccessKeyID)
	require.Equal(t, "https://agents.example.com", cfg.Server.PublicURL, "the rest of the file still applies")
}
