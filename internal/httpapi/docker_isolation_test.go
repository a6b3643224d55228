package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/config"
)

// refusedField asserts a 400 invalid_argument whose one detail names field
// and, in its reason, the configuration key that would allow it.
func refusedField(t *testing.T, status int, out map[string]any, field, key string) {
	t.Helper()
	require.Equal(t, http.StatusBadRequest, status, out)
	e := out["error"].(map[string]any)
	require.Equal(t, "invalid_argument", e["code"])
	details := e["details"].([]any)
	require.Len(t, details, 1, out)
	d := details[0].(map[string]any)
	require.Equal(t, field, d["field"])
	require.Contains(t, d["reason"], key)
}

// A workspace editor cannot give its docker containers the host's network,
// another container's network namespace, or a network other workspaces use,
// nor run them as root: on create and on PATCH, provider and template.
func TestDockerNetworksAndRootAreRefusedUnlessTheOperatorAllowsThem(t *testing.T) {
	t.Parallel()
	b := setupTemplates(t)
	engine := map[string]any{"host": "unix:///var/run/docker.sock"}
	withNetwork := func(n string) map[string]any {
		return map[string]any{"host": "unix:///var/run/docker.sock", "network": n}
	}
	for _, n := range []string{"host", "container:svc-env_01jd5v6w1q3yb8j8y3tn9z2k7h", "bridge", "other-tenant"} {
		status, out, _ := b.do(t, http.MethodPost, "/api/v1/environment-providers", map[string]any{"type": "docker", "name": "D", "config": withNetwork(n)})
		refusedField(t, status, out, "config.network", "environments.docker_networks")
	}
	// "none" is the default and always allowed.
	b.create(t, "environment", map[string]any{"type": "docker", "name": "D", "config": withNetwork("none")})
	status, out, _ := b.do(t, http.MethodPatch, "/api/v1/environment-providers/"+b.docker, map[string]any{"config": withNetwork("host")}, "If-Match", `"`+b.docker+`:1"`)
	refusedField(t, status, out, "config.network", "environments.docker_networks")
	status, _, _ = b.do(t, http.MethodPatch, "/api/v1/environment-providers/"+b.docker, map[string]any{"config": engine}, "If-Match", `"`+b.docker+`:1"`)
	require.Equal(t, http.StatusOK, status)

	for _, user := range []string{"root", "0", "0:0", "1000:0", "app"} {
		status, out, _ := b.do(t, http.MethodPost, templatesPath, b.body("t", map[string]any{"config": map[string]any{"image": "python:3.13-slim", "user": user}}))
		refusedField(t, status, out, "config.user", "environments.docker_allow_root")
	}
	tpl := b.mustTemplate(t, "t", map[string]any{"config": map[string]any{"image": "python:3.13-slim", "user": "1000:1000"}})
	status, out, _ = b.do(t, http.MethodPatch, templatesPath+"/"+tpl["id"].(string),
		map[string]any{"config": map[string]any{"image": "python:3.13-slim", "user": "root"}}, "If-Match", etag(tpl))
	refusedField(t, status, out, "config.user", "environments.docker_allow_root")
	require.Equal(t, 1, b.count(t), "nothing refused was stored")
}

func TestDockerNetworksAndRootAreAcceptedWhenTheOperatorAllowsThem(t *testing.T) {
	t.Parallel()
	b := &templatesBundle{providersBundle: setupProvidersWith(t, func(cfg *config.Config) {
		cfg.EndpointPolicy.AllowedSockets = []string{"/var/run/docker.sock"}
		cfg.Environments.DockerNetworks = []string{"host", "container:shared-proxy", "agents"}
		cfg.Environments.DockerAllowRoot = true
	})}
	for _, n := range []string{"host", "container:shared-proxy", "agents"} {
		p := b.create(t, "environment", map[string]any{"type": "docker", "name": "D", "config": map[string]any{"host": "unix:///var/run/docker.sock", "network": n}})
		require.Equal(t, n, p["config"].(map[string]any)["network"])
		b.docker = p["id"].(string)
	}
	status, out, _ := b.do(t, http.MethodPost, "/api/v1/environment-providers",
		map[string]any{"type": "docker", "name": "D", "config": map[string]any{"host": "unix:///var/run/docker.sock", "network": "container:other"}})
	refusedField(t, status, out, "config.network", "environments.docker_networks")
	for _, user := range []string{"root", "0:0", "app"} {
		tpl := b.mustTemplate(t, "t", map[string]any{"config": map[string]any{"image": "python:3.13-slim", "user": user}})
		require.Equal(t, user, tpl["config"].(map[string]any)["user"])
	}
}
