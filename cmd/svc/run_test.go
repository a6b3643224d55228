package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/testdb"
	schema "github.com/svcdev/svc/sql"
)

// TestStartupConfigErrors: a process refuses to start on a missing key ring or
// unknown configuration, naming what to fix, before it touches the database.
func TestStartupConfigErrors(t *testing.T) {
	t.Parallel()
	keyRing := newKeyRing(t)

	t.Run("no key ring", func(t *testing.T) {
		t.Parallel()
		// A migrated database: without the key ring check the process would start.
		r := runSvcWithin(t, refuseTimeout, runVars(t, testdb.NewURL(t), ""), "run")
		require.Equal(t, 1, r.code, "%s", r)
		require.Contains(t, r.stderr, "svc keyring generate", "%s", r)
		require.Contains(t, r.stderr, "SVC_ENCRYPTION__KEY_FILE", "%s", r)
		require.NotContains(t, r.stderr, "svc ready", "%s", r)
	})

	t.Run("missing key ring file", func(t *testing.T) {
		t.Parallel()
		missing := filepath.Join(t.TempDir(), "absent.json")
		r := runSvcWithin(t, refuseTimeout, runVars(t, testdb.NewURL(t), missing), "run", "--role", "worker")
		require.Equal(t, 1, r.code, "%s", r)
		require.Contains(t, r.stderr, missing, "%s", r)
		require.NotContains(t, r.stderr, "svc ready", "%s", r)
	})

	t.Run("unknown key in the config file", func(t *testing.T) {
		t.Parallel()
		file := filepath.Join(t.TempDir(), "svc.toml")
		require.NoError(t, os.WriteFile(file, []byte("[server]\nlisten = \"127.0.0.1:0\"\nlisen_typo = \"x\"\n"), 0o600))
		url := testdb.Empty(t)
		for _, args := range [][]string{{"--config", file, "run"}, {"--config", file, "migrate"}} {
			r := runSvcWithin(t, refuseTimeout, runVars(t, url, keyRing), args...)
			require.Equal(t, 1, r.code, "%s", r)
			require.Contains(t, r.stderr, "server.lisen_typo", "names the key: %s", r)
			require.Contains(t, r.stderr, file, "names the file: %s", r)
		}
		requireEmptyDatabase(t, url)
	})

	t.Run("unknown SVC_ variable", func(t *testing.T) {
		t.Parallel()
		url := testdb.Empty(t)
		for _, name := range []string{"SVC_SERVER__LISTEN_TYPO", "SVC_BOGUS"} {
			for _, cmd := range []string{"run", "migrate"} {
				vars := runVars(t, url, keyRing)
				vars[name] = "1"
				r := runSvcWithin(t, refuseTimeout, vars, cmd)
				require.Equal(t, 1, r.code, "%s", r)
				require.Contains(t, r.stderr, name, "names the variable: %s", r)
			}
		}
		requireEmptyDatabase(t, url)
	})

	t.Run("invalid value", func(t *testing.T) {
		t.Parallel()
		url := testdb.Empty(t)
		vars := dbVars(url)
		vars["SVC_DATABASE__MIGRATION_ADVISORY_LOCK_TIMEOUT"] = "soon"
		r := runSvcWithin(t, refuseTimeout, vars, "migrate")
		require.Equal(t, 1, r.code, "%s", r)
		require.Contains(t, r.stderr, "SVC_DATABASE__MIGRATION_ADVISORY_LOCK_TIMEOUT", "%s", r)
		requireEmptyDatabase(t, url)
	})

	t.Run("unreachable database", func(t *testing.T) {
		t.Parallel()
		const password = "hunter2secret"
		url := "postgres://svcuser:" + password + "@127.0.0.1:1/svc?sslmode=disable"
		for _, args := range [][]string{{"migrate"}, {"migrate", "--check"}, {"run", "--role", "worker"}} {
			vars := runVars(t, url, keyRing)
			vars["SVC_DATABASE__CONNECT_TIMEOUT"] = "2s"
			r := runSvcWithin(t, refuseTimeout, vars, args...)
			require.Equal(t, 1, r.code, "%s", r)
			require.Contains(t, r.stderr, "127.0.0.1:1", "names the server: %s", r)
			require.NotContains(t, r.stderr, password, "never prints the password: %s", r)
		}
	})
}

// TestRunLifecycle: each role becomes ready quickly on a migrated database, serves
// what its role serves and nothing else, and stops cleanly on SIGTERM and SIGINT.
func TestRunLifecycle(t *testing.T) {
	t.Parallel()
	keyRing := newKeyRing(t)

	cases := []struct {
		role    string
		control bool
		sig     syscall.Signal
		sigName string
		metrics bool
	}{
		{"all", true, syscall.SIGTERM, "SIGTERM", true},
		{"control", true, syscall.SIGINT, "SIGINT", false},
		{"worker", false, syscall.SIGINT, "SIGINT", true},
	}
	for _, tc := range cases {
		t.Run(tc.role+"/"+tc.sigName, func(t *testing.T) {
			t.Parallel()
			vars := runVars(t, testdb.NewURL(t), keyRing)
			if tc.metrics {
				// A port of the kernel's choice, read back from the ready record: a
				// port found free beforehand could be taken before the child binds it.
				vars["SVC_METRICS__LISTEN"] = "127.0.0.1:0"
			}
			p := startSvc(t, vars, "run", "--role", tc.role)
			ready := p.waitReadyRecord()
			addr, _ := ready["listen"].(string)
			require.NotEmpty(t, addr, "svc ready record without listen: %v", ready)
			metricsAddr, _ := ready["metrics_listen"].(string)
			if tc.metrics {
				require.NotEmpty(t, metricsAddr, "svc ready record without metrics_listen: %v", ready)
			}
			took := p.waitReadyz(addr)
			t.Logf("role %s: /readyz 200 after %s (from process start)", tc.role, took.Round(time.Millisecond))
			require.Less(t, took, 10*time.Second, "ready on a migrated database (expected well under 1s)")
			base := "http://" + addr

			resp := get(t, base+"/healthz")
			require.Equal(t, http.StatusOK, resp.status)
			require.JSONEq(t, fmt.Sprintf(`{"status":"ok","role":%q}`, tc.role), string(resp.body))
			require.NotEmpty(t, resp.header.Get("X-Request-Id"))
			resp = get(t, base+"/readyz")
			require.Equal(t, http.StatusOK, resp.status)
			require.JSONEq(t, fmt.Sprintf(`{"status":"ready","role":%q}`, tc.role), string(resp.body))

			for _, path := range []string{"/api/v1/openapi.json", "/api/v1/docs", "/"} {
				resp = get(t, base+path)
				if tc.control {
					require.Equal(t, http.StatusOK, resp.status, "GET %s", path)
				} else {
					require.Equal(t, http.StatusNotFound, resp.status, "a worker serves only the probes: GET %s", path)
				}
				require.NotEmpty(t, resp.header.Get("X-Request-Id"), "GET %s", path)
			}
			if tc.control {
				resp = get(t, base+"/api/v1/openapi.json")
				require.True(t, json.Valid(resp.body), "openapi.json is JSON")
			}

			resp = get(t, base+"/metrics")
			require.Equal(t, http.StatusNotFound, resp.status, "metrics are never served on the API port")
			if tc.metrics {
				resp = get(t, "http://"+metricsAddr+"/metrics")
				require.Equal(t, http.StatusOK, resp.status)
				body := string(resp.body)
				buildInfo := regexp.MustCompile(`(?m)^svc_build_info\{.*\} 1$`).FindString(body)
				require.NotEmpty(t, buildInfo, "svc_build_info in:\n%s", body)
				require.Contains(t, buildInfo, `version="`+testVersion+`"`)
				require.Contains(t, buildInfo, fmt.Sprintf(`schema_version="%d"`, schema.Version()))
				require.Contains(t, body, `svc_http_requests_total{method="GET",route="/healthz",status="200"}`)
				require.Regexp(t, `(?m)^svc_db_pool_max_conns \d+$`, body)
			}

			require.Equal(t, 0, p.stop(tc.sig, stopTimeout), "exit code after %s", tc.sigName)
			rec, ok := findRecord(p.stderr.String(), "svc stopping")
			require.True(t, ok, "a svc stopping record; stderr:\n%s", p.stderr.String())
			require.Equal(t, tc.role, rec["role"])
			require.Empty(t, p.stdout.String(), "run prints nothing on stdout")
		})
	}
}

// TestRequestLogHygiene: request records name the route
// template and the response's X-Request-Id, and never the URL or query string.
func TestRequestLogHygiene(t *testing.T) {
	t.Parallel()
	const secret = "supersecret123"
	vars := runVars(t, testdb.NewURL(t), newKeyRing(t))
	vars["SVC_LOG__LEVEL"] = "debug"
	p := startSvc(t, vars, "run")
	base := "http://" + p.waitReady()

	docs := get(t, base+"/api/v1/openapi.json?token="+secret)
	require.Equal(t, http.StatusOK, docs.status)
	nope := get(t, base+"/nope?x="+secret)
	require.Equal(t, http.StatusNotFound, nope.status)
	health := get(t, base+"/healthz?probe="+secret)
	require.Equal(t, http.StatusOK, health.status)

	// The error body carries the same request id as the header.
	var body struct {
		Error struct {
			RequestID string `json:"request_id"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(nope.body, &body), "%s", nope.body)
	require.Equal(t, nope.header.Get("X-Request-Id"), body.Error.RequestID)

	require.Equal(t, 0, p.stop(syscall.SIGTERM, stopTimeout))
	stderr := p.stderr.String()
	require.NotContains(t, stderr, secret, "query strings are never logged")
	require.NotContains(t, stderr, "/nope", "unmatched paths are never logged")
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		require.True(t, json.Valid([]byte(line)), "every stderr line is a JSON record: %q", line)
	}

	byID := map[string]map[string]any{}
	for _, rec := range records(stderr) {
		if rec["msg"] == "request" {
			id, _ := rec["request_id"].(string)
			byID[id] = rec
		}
	}
	for _, want := range []struct {
		resp  response
		route string
	}{
		{docs, "/api/v1/openapi.json"},
		{nope, "unmatched"},
		{health, "/healthz"},
	} {
		id := want.resp.header.Get("X-Request-Id")
		require.NotEmpty(t, id)
		rec, ok := byID[id]
		require.True(t, ok, "a request record with request_id %s; stderr:\n%s", id, stderr)
		require.Equal(t, want.route, rec["route"], "route template of request %s", id)
		require.Equal(t, float64(want.resp.status), rec["status"])
		require.Equal(t, "GET", rec["method"])
	}
}
