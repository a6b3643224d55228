package httpapi_test

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/provider/probe/vendortest"
	"github.com/svcdev/svc/internal/testfactory"
)

// setupProbes starts a process whose endpoint policy lets it call the given
// local stand-ins, as an operator allows a vendor on its own network.
func setupProbes(t *testing.T, configure func(*config.EndpointPolicy), servers ...string) *providersBundle {
	t.Helper()
	return setupProvidersWith(t, func(cfg *config.Config) {
		cfg.EndpointPolicy.AllowHTTP = true
		cfg.EndpointPolicy.AllowedPrefixes = []string{"127.0.0.0/8"}
		for _, s := range servers {
			u, err := url.Parse(s)
			require.NoError(t, err)
			port, err := strconv.Atoi(u.Port())
			require.NoError(t, err)
			cfg.EndpointPolicy.AllowedPorts = append(cfg.EndpointPolicy.AllowedPorts, port)
		}
		if configure != nil {
			configure(&cfg.EndpointPolicy)
		}
	})
}

func vendor(t *testing.T, typ string) vendortest.Vendor {
	t.Helper()
	for _, v := range vendortest.Vendors() {
		if v.Type == typ {
			return v
		}
	}
	t.Fatalf("no stand-in for %s", typ)
	return vendortest.Vendor{}
}

func TestProviderTestProbesTheVendor(t *testing.T) {
	t.Parallel()
	const key = "sk-test-0123456789abcdefghij"
	srv := vendortest.Start(t, vendor(t, "anthropic"), key)
	b := setupProbes(t, nil, srv.URL)
	p := b.create(t, "model", map[string]any{"type": "anthropic", "name": "claude", "config": srv.ProviderConfig(), "credential": map[string]any{"api_key": key}})
	path := "/api/v1/model-providers/" + p["id"].(string) + "/test"

	status, out, _ := b.do(t, http.MethodPost, path, nil)
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, "succeeded", out["result"])
	require.Nil(t, out["message"])
	require.GreaterOrEqual(t, out["duration_ms"], 0.0)
	require.Empty(t, srv.Problems())

	// A runner may test; a viewer may not (the test needs run).
	runner := testfactory.AddMember(t, b.h.App.Pool, b.admin.OrganizationID, b.admin.WorkspaceID, testfactory.MemberOpts{WorkspaceRole: "runner"})
	status, out, _ = b.do(t, http.MethodPost, path, nil, "Authorization", "Bearer "+runner.Token)
	require.Equal(t, http.StatusOK, status, out)
	status, out, _ = b.do(t, http.MethodPost, path, nil, "Authorization", "Bearer "+b.viewer.Token)
	require.Equal(t, http.StatusForbidden, status, out)
	require.Len(t, srv.Requests(), 2, "a refused caller sends nothing")

	// A rotated key at the vendor: the test fails and says why, without the key.
	srv.Key = "sk-test-rotated"
	status, out, _ = b.do(t, http.MethodPost, path, nil)
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, "failed", out["result"])
	require.Equal(t, "Anthropic refused the credential (HTTP 401)", out["message"])

	// Testing changes nothing: the version stays.
	status, view, _ := b.do(t, http.MethodGet, "/api/v1/model-providers/"+p["id"].(string), nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, 1.0, view["version"])
}

func TestProviderTestRefusesADisabledProvider(t *testing.T) {
	t.Parallel()
	srv := vendortest.Start(t, vendor(t, "pinecone"), "k")
	b := setupProbes(t, nil, srv.URL)
	p := b.create(t, "memory", map[string]any{"type": "pinecone", "name": "mem", "config": srv.ProviderConfig(), "credential": map[string]any{"api_key": "k"}})
	id := p["id"].(string)
	status, out, _ := b.do(t, http.MethodPatch, "/api/v1/memory-providers/"+id, map[string]any{"enabled": false}, "If-Match", `"`+id+`:1"`)
	require.Equal(t, http.StatusOK, status, out)

	status, out, _ = b.do(t, http.MethodPost, "/api/v1/memory-providers/"+id+"/test", nil)
	require.Equal(t, http.StatusConflict, status, out)
	require.Equal(t, "disabled", out["error"].(map[string]any)["code"])
	require.Empty(t, srv.Requests())

	status, out, _ = b.do(t, http.MethodPatch, "/api/v1/memory-providers/"+id, map[string]any{"enabled": true}, "If-Match", `"`+id+`:2"`)
	require.Equal(t, http.StatusOK, status, out)
	status, out, _ = b.do(t, http.MethodPost, "/api/v1/memory-providers/"+id+"/test", nil)
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, "succeeded", out["result"], out)
}

func TestProviderTestUnsupportedAndAbsent(t *testing.T) {
	t.Parallel()
	b := setupProbes(t, nil)
	for _, tc := range []struct{ kind, typ string }{
		{"web", "tavily"},
		{"model", "aws_bedrock"},
		{"model", "claude_subscription"},
		{"environment", "e2b"},
	} {
		body := map[string]any{"type": tc.typ, "name": tc.typ, "config": map[string]any{}, "credential": map[string]any{"api_key": "k"}}
		switch tc.typ {
		case "aws_bedrock":
			body["config"] = map[string]any{"region": "eu-central-1"}
			body["credential"] = map[string]any{"access_key_id": "AKIAIOSFODNN7EXAMPLE", "secret_access_key": "secret"}
		case "claude_subscription":
			body["credential"] = map[string]any{"oauth_token": "sk-ant-oat01-example"}
		}
		p := b.create(t, tc.kind, body)
		status, out, _ := b.do(t, http.MethodPost, "/api/v1/"+tc.kind+"-providers/"+p["id"].(string)+"/test", nil)
		require.Equal(t, http.StatusOK, status, out)
		require.Equal(t, "unsupported", out["result"], tc.typ)
		require.Nil(t, out["message"], tc.typ)
	}

	// Absent, another kind's collection, and another workspace's: the same 404.
	missing := "prv_01jd5v6w1q3yb8j8y3tn9z2k7h"
	status, out, _ := b.do(t, http.MethodPost, "/api/v1/model-providers/"+missing+"/test", nil)
	require.Equal(t, http.StatusNotFound, status, out)
	web := b.create(t, "web", map[string]any{"type": "tavily", "name": "t", "credential": map[string]any{"api_key": "k"}})
	status, out, _ = b.do(t, http.MethodPost, "/api/v1/model-providers/"+web["id"].(string)+"/test", nil)
	require.Equal(t, http.StatusNotFound, status, out)
}

func TestProviderTestPingsTheEngineOnlyWhenItsSocketIsAllowed(t *testing.T) {
	t.Parallel()
	engine := vendortest.StartEngineSocket(t)
	b := setupProbes(t, func(p *config.EndpointPolicy) { p.AllowedSockets = []string{engine.Socket} })
	p := b.create(t, "environment", map[string]any{"type": "docker", "name": "engine", "config": map[string]any{"host": "unix://" + engine.Socket}})
	status, out, _ := b.do(t, http.MethodPost, "/api/v1/environment-providers/"+p["id"].(string)+"/test", nil)
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, "succeeded", out["result"], out)
	require.Equal(t, []string{"GET /_ping"}, engine.Requests(), "nothing is created")

	// Another socket, and the default one, are refused when saved, naming the field.
	for _, cfg := range []map[string]any{{"host": "unix:///run/postgresql/.s.PGSQL.5432"}, {}} {
		status, out, _ = b.do(t, http.MethodPost, "/api/v1/environment-providers", map[string]any{"type": "docker", "name": "x", "config": cfg})
		require.Equal(t, http.StatusBadRequest, status, out)
		require.Equal(t, []string{"config.host"}, fields(t, out))
	}
	// A tcp engine is an endpoint like any other: private addresses are refused.
	status, out, _ = b.do(t, http.MethodPost, "/api/v1/environment-providers", map[string]any{"type": "docker", "name": "x", "config": map[string]any{"host": "tcp://10.0.0.5:2376"}})
	require.Equal(t, http.StatusBadRequest, status, out)
	require.Equal(t, []string{"config.host"}, fields(t, out))
}
