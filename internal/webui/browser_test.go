package webui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
)

// testSpec is the OpenAPI document the browser test feeds to Scalar. The
// test looks for its title and operation summary in the rendered DOM, and for
// the request example at the page's own origin: the server "/" is relative,
// as the contract's first server is.
const testSpec = `{
  "openapi": "3.0.3",
  "info": {"title": "svc webui test", "version": "1.0.0"},
  "servers": [{"url": "/"}, {"url": "{origin}", "variables": {"origin": {"default": "http://127.0.0.1:8080"}}}],
  "paths": {
    "/healthz": {
      "get": {
        "operationId": "getHealthz",
        "summary": "Liveness probe",
        "responses": {"200": {"description": "The process is alive."}}
      }
    }
  }
}`

// TestDocsPageInRealBrowser loads /api/v1/docs in headless Chromium and
// proves two things: Scalar really renders the spec from the embedded assets
// under the production CSP, and the page makes no request to any host but
// this server. Outside requests are caught twice: in Chromium's net-log (what
// hit the network stack) and as CSP violation reports (what the policy
// blocked before it got there, such as web fonts from fonts.scalar.com).
func TestDocsPageInRealBrowser(t *testing.T) {
	t.Parallel()
	chromium := requireChromium(t)

	srv, violations := startDocsServer(t)
	dir := t.TempDir()
	netLog := filepath.Join(dir, "netlog.json")

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, chromiumArgs(dir, netLog, srv.URL+"/api/v1/docs")...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second // don't hang on helper processes holding the pipes
	start := time.Now()
	runErr := cmd.Run()
	t.Logf("chromium ran for %s", time.Since(start).Round(time.Millisecond))

	// Look at the network first: it matters even if chromium then failed.
	requested, truncated, err := netLogRequests(netLog)
	require.NoError(t, err, "read chromium net-log; chromium stderr:\n%s", tail(stderr.String()))
	if truncated {
		t.Log("chromium net-log was truncated (chromium did not exit cleanly); checked the events it has")
	}
	var outside []string
	for _, u := range slices.Sorted(maps.Keys(requested)) {
		if !isLocalURL(u) {
			outside = append(outside, fmt.Sprintf("%s (initiator: %s)", u, requested[u]))
		}
	}
	require.Empty(t, outside, "the docs page requested URLs outside this server "+
		"(initiator 'not an origin' means Chromium's own traffic: neutralize it in chromiumArgs).\n"+
		"All requested URLs:\n%s", strings.Join(slices.Sorted(maps.Keys(requested)), "\n"))
	require.Empty(t, unexpectedViolations(violations.list()), "the docs page broke its "+
		"Content-Security-Policy (blocked attempts, possibly to outside hosts)")

	require.NoError(t, runErr, "chromium failed; stderr:\n%s", tail(stderr.String()))
	// Guard the guard: the net-log must have seen the page's own requests, or
	// an empty "outside" list would prove nothing.
	for _, path := range []string{"/api/v1/docs/assets/" + ScalarAsset, "/api/v1/docs/assets/" + InitAsset, "/api/v1/openapi.json"} {
		require.Contains(t, requested, srv.URL+path, "net-log lacks a request the page must make")
	}

	dom := stdout.String()
	require.Contains(t, dom, "Liveness probe", "Scalar did not render the operation; DOM:\n%s", tail(dom))
	require.Contains(t, dom, "svc webui test", "Scalar did not render the spec title")
	// The example's text, without the spans that highlight it.
	text := regexp.MustCompile(`<[^>]*>`).ReplaceAllString(dom, "")
	require.True(t, strings.Contains(text, "curl "+srv.URL+"/healthz"),
		"the request example is not at the page's own origin (%s); DOM:\n%s", srv.URL, tail(dom))
}

// requireChromium returns Chromium's path. A missing browser fails the test,
// because silently skipping would hide a real gap, unless the environment
// opts out explicitly.
func requireChromium(t *testing.T) string {
	t.Helper()
	if os.Getenv("SVCDEV_SKIP_BROWSER_TESTS") == "1" {
		t.Skip("SVCDEV_SKIP_BROWSER_TESTS=1: skipping the headless-Chromium test")
	}
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium not found on PATH (%v): run scripts/install-chromium.sh, "+
			"or set SVCDEV_SKIP_BROWSER_TESTS=1 to skip browser tests", err)
	}
	return path
}

// chromiumArgs are the flags checked with Debian's Chromium 156 (new headless
// mode). --virtual-time-budget lets the page run its scripts and fetches
// before --dump-dom prints the DOM, without real waiting.
//
// The resolver rule keeps the test hermetic: an outside request still shows
// up in the net-log (which is what the test checks) but never leaves the
// machine. Chromium itself phones home at start-up even with
// --disable-background-networking (network time, optimization-guide models,
// an on-demand component update, a Google-accounts probe); those are switched
// off or pointed at a closed loopback port, so every URL in the net-log must be local and any
// outside one is the page's doing.
// chromiumSinkURL receives Chromium's own service traffic: nothing listens on
// the discard port, so those requests fail at once without leaving loopback.
const chromiumSinkURL = "http://127.0.0.1:9/"

func chromiumArgs(userDataDir, netLog, pageURL string) []string {
	return []string{
		"--headless",
		"--no-sandbox", // runs as root in CI containers
		"--disable-gpu",
		"--disable-quic",
		"--no-first-run",
		"--no-default-browser-check",
		"--disable-background-networking",
		"--disable-component-update",
		"--disable-sync",
		"--disable-default-apps",
		"--disable-extensions",
		"--disable-dev-shm-usage",
		"--no-proxy-server",
		"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
		"--disable-features=NetworkTimeServiceQuerying,OptimizationGuideModelDownloading," +
			"OptimizationHintsFetching,OptimizationHints,OptimizationTargetPrediction",
		"--component-updater=url-source=" + chromiumSinkURL,
		"--gaia-url=" + chromiumSinkURL,
		"--user-data-dir=" + userDataDir,
		"--log-net-log=" + netLog,
		"--net-log-capture-mode=Default",
		"--virtual-time-budget=15000",
		"--dump-dom",
		pageURL,
	}
}

// startDocsServer serves the docs routes, a test spec, and a CSP report sink
// on 127.0.0.1. Reports are enabled by appending report-uri to the policy the
// handlers set; the policy itself is unchanged.
func startDocsServer(t *testing.T) (*httptest.Server, *cspReports) {
	t.Helper()
	reports := &cspReports{}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			resp := c.Response()
			resp.Before(func() {
				if csp := resp.Header().Get("Content-Security-Policy"); csp != "" {
					resp.Header().Set("Content-Security-Policy", csp+"; report-uri /csp-report")
				}
			})
			return next(c)
		}
	})
	e.GET("/api/v1/docs", DocsPage)
	e.GET("/api/v1/docs/assets/:name", DocsAsset)
	e.GET("/api/v1/openapi.json", func(c echo.Context) error {
		return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, []byte(testSpec))
	})
	e.POST("/csp-report", func(c echo.Context) error {
		body, err := io.ReadAll(io.LimitReader(c.Request().Body, 64<<10))
		if err != nil {
			return err
		}
		reports.add(string(body))
		return c.NoContent(http.StatusNoContent)
	})

	srv := httptest.NewServer(e) // listens on 127.0.0.1
	t.Cleanup(srv.Close)
	return srv, reports
}

// unexpectedViolations summarizes the CSP reports that point at a real
// problem, one "directive blocked URI (source)" line each. The one expected
// report comes from Zod 4 inside the Scalar bundle: it calls Function("")
// once to learn whether it may compile validators, catches the CSP error and
// falls back to interpreting them. Anything else (an outside font, an inline
// script, a blocked fetch) is returned.
func unexpectedViolations(reports []string) []string {
	var bad []string
	for _, raw := range reports {
		var r struct {
			Report struct {
				Directive  string `json:"effective-directive"`
				BlockedURI string `json:"blocked-uri"`
				SourceFile string `json:"source-file"`
			} `json:"csp-report"`
		}
		if err := json.Unmarshal([]byte(raw), &r); err != nil || r.Report.Directive == "" {
			bad = append(bad, "unparsable report: "+raw)
			continue
		}
		v := r.Report
		if v.Directive == "script-src" && v.BlockedURI == "eval" &&
			strings.HasSuffix(v.SourceFile, "/api/v1/docs/assets/"+ScalarAsset) {
			continue
		}
		bad = append(bad, fmt.Sprintf("%s blocked %s (source: %s)", v.Directive, v.BlockedURI, v.SourceFile))
	}
	return bad
}

// cspReports collects CSP violation reports posted by the browser.
type cspReports struct {
	mu      sync.Mutex
	reports []string
}

func (r *cspReports) add(report string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reports = append(r.reports, report)
}

func (r *cspReports) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reports)
}

// isLocalURL reports whether a requested URL stays on this machine. Schemes
// that never reach the network are ignored.
func isLocalURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	switch u.Scheme {
	case "data", "blob", "chrome", "about":
		return true
	}
	switch u.Hostname() {
	case "127.0.0.1", "localhost":
		return true
	}
	return false
}

// tail returns the end of a long string, enough for a failure message.
func tail(s string) string {
	const max = 4000
	if len(s) <= max {
		return s
	}
	return "..." + s[len(s)-max:]
}
