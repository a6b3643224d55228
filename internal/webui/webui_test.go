package webui

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
)

// scalarSHA256 is the sha256 of Scalar's dist/browser/standalone.js as pinned
// in scripts/vendor-scalar.sh.
const scalarSHA256 = "bf091006bdc3af6067af77c2f534812e3e633e94a94e87138069f570f33b762c"

const (
	scalarPath = "/api/v1/docs/assets/" + ScalarAsset
	initPath   = "/api/v1/docs/assets/" + InitAsset
)

// newTestEcho registers the handlers the way the caller is expected to, with
// HEAD routed as well.
func newTestEcho() *echo.Echo {
	e := echo.New()
	methods := []string{http.MethodGet, http.MethodHead}
	e.Match(methods, "/api/v1/docs", DocsPage)
	e.Match(methods, "/api/v1/docs/assets/:name", DocsAsset)
	return e
}

// do sends one request; headers alternate name, value.
func do(t *testing.T, method, target string, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	require.Zero(t, len(headers)%2, "headers must be name/value pairs")
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	newTestEcho().ServeHTTP(rec, req)
	return rec
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func requireSecurityHeaders(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	h := rec.Header()
	require.Equal(t, ContentSecurityPolicy, h.Get("Content-Security-Policy"))
	require.Equal(t, "nosniff", h.Get("X-Content-Type-Options"))
	require.Equal(t, "no-referrer", h.Get("Referrer-Policy"))
}

func TestEmbeddedScalarMatchesVendoredHash(t *testing.T) {
	t.Parallel()
	plain, err := gunzip(scalarGzip)
	require.NoError(t, err)
	require.Equal(t, scalarSHA256, sha256Hex(plain), "embedded bundle differs from the pinned upstream file")
	require.Len(t, plain, 4_353_277)
}

func TestScalarGzipNegotiation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		acceptEncoding string // "" sends no header
		wantGzip       bool
	}{
		{"gzip", true},
		{"gzip, deflate, br", true},
		{"*", true},
		{"gzip;q=0", false},
		{"gzip;q=0, *", false},
		{"identity", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run("Accept-Encoding="+tt.acceptEncoding, func(t *testing.T) {
			t.Parallel()
			var headers []string
			if tt.acceptEncoding != "" {
				headers = []string{"Accept-Encoding", tt.acceptEncoding}
			}
			rec := do(t, http.MethodGet, scalarPath, headers...)
			require.Equal(t, http.StatusOK, rec.Code)
			requireSecurityHeaders(t, rec)
			h := rec.Header()
			require.Equal(t, "text/javascript; charset=utf-8", h.Get("Content-Type"))
			require.Equal(t, "public, max-age=31536000, immutable", h.Get("Cache-Control"))
			require.Equal(t, "Accept-Encoding", h.Get("Vary"))
			require.Equal(t, strconv.Itoa(rec.Body.Len()), h.Get("Content-Length"))

			if tt.wantGzip {
				require.Equal(t, "gzip", h.Get("Content-Encoding"))
				require.Equal(t, scalarGzip, rec.Body.Bytes(), "must serve the embedded bytes as is")
				return
			}
			require.Empty(t, h.Get("Content-Encoding"))
			require.Equal(t, scalarSHA256, sha256Hex(rec.Body.Bytes()))
		})
	}
}

func TestScalarRepresentationsHaveDistinctETags(t *testing.T) {
	t.Parallel()
	gz := do(t, http.MethodGet, scalarPath, "Accept-Encoding", "gzip").Header().Get("ETag")
	plain := do(t, http.MethodGet, scalarPath).Header().Get("ETag")
	require.Regexp(t, `^"[0-9a-f]{32}(-gzip)?"$`, gz)
	require.Regexp(t, `^"[0-9a-f]{32}(-gzip)?"$`, plain)
	require.NotEqual(t, gz, plain, "gzip and identity bodies differ, so their strong ETags must too")

	// A cached gzip body must not validate a request that cannot take gzip.
	rec := do(t, http.MethodGet, scalarPath, "If-None-Match", gz)
	require.Equal(t, http.StatusOK, rec.Code)
}

func TestHeadersAndBodies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path         string
		contentType  string
		cacheControl string
		body         []byte
	}{
		{"/api/v1/docs", "text/html; charset=utf-8", "no-cache", docsHTML},
		{initPath, "text/javascript; charset=utf-8", "no-cache", docsInitJS},
		{scalarPath, "text/javascript; charset=utf-8", "public, max-age=31536000, immutable", scalarGzip},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			t.Parallel()
			rec := do(t, http.MethodGet, tt.path, "Accept-Encoding", "gzip")
			require.Equal(t, http.StatusOK, rec.Code)
			requireSecurityHeaders(t, rec)
			h := rec.Header()
			require.Equal(t, tt.contentType, h.Get("Content-Type"))
			require.Equal(t, tt.cacheControl, h.Get("Cache-Control"))
			require.Regexp(t, `^"[0-9a-f]{32}(-gzip)?"$`, h.Get("ETag"), "strong ETag")
			require.Equal(t, tt.body, rec.Body.Bytes())
			require.Equal(t, strconv.Itoa(len(tt.body)), h.Get("Content-Length"))

			head := do(t, http.MethodHead, tt.path, "Accept-Encoding", "gzip")
			require.Equal(t, http.StatusOK, head.Code)
			require.Zero(t, head.Body.Len(), "HEAD must not have a body")
			for _, name := range []string{"Content-Type", "Content-Length", "ETag", "Cache-Control", "Content-Security-Policy"} {
				require.Equal(t, h.Get(name), head.Header().Get(name), "HEAD header %s", name)
			}
		})
	}
}

func TestConditionalRequests(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path           string
		acceptEncoding string
	}{
		{"/api/v1/docs", ""},
		{initPath, ""},
		{scalarPath, "gzip"},
		{scalarPath, "identity"},
	}
	for _, tt := range tests {
		t.Run(tt.path+" "+tt.acceptEncoding, func(t *testing.T) {
			t.Parallel()
			first := do(t, http.MethodGet, tt.path, "Accept-Encoding", tt.acceptEncoding)
			require.Equal(t, http.StatusOK, first.Code)
			etag := first.Header().Get("ETag")
			require.NotEmpty(t, etag)

			for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
				rec := do(t, http.MethodGet, tt.path, "Accept-Encoding", tt.acceptEncoding, "If-None-Match", inm)
				require.Equal(t, http.StatusNotModified, rec.Code, "If-None-Match: %s", inm)
				require.Zero(t, rec.Body.Len())
				require.Equal(t, etag, rec.Header().Get("ETag"))
				require.Equal(t, first.Header().Get("Cache-Control"), rec.Header().Get("Cache-Control"))
				require.Equal(t, first.Header().Get("Vary"), rec.Header().Get("Vary"))
				requireSecurityHeaders(t, rec)
			}

			rec := do(t, http.MethodGet, tt.path, "Accept-Encoding", tt.acceptEncoding, "If-None-Match", `"stale"`)
			require.Equal(t, http.StatusOK, rec.Code)
			require.Equal(t, first.Body.Bytes(), rec.Body.Bytes())
		})
	}
}

func TestUnknownAssetIsNotFound(t *testing.T) {
	t.Parallel()
	for _, name := range []string{
		"scalar.js", "scalar-1.72.1.js.gz", "scalar-1.0.0.js", "SCALAR-LICENSE",
		"docs.html", "..%2fdocs.html", "Docs-Init.js",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rec := do(t, http.MethodGet, "/api/v1/docs/assets/"+name)
			require.Equal(t, http.StatusNotFound, rec.Code)
			requireSecurityHeaders(t, rec)
		})
	}
}

var scriptTag = regexp.MustCompile(`(?is)<script\b[^>]*>`)

func TestDocsPageMarkup(t *testing.T) {
	t.Parallel()
	page := string(docsHTML)
	require.Contains(t, page, "<title>svc API</title>")
	require.Contains(t, page, `<div id="app"></div>`)

	// Exactly the two scripts this package serves, in order, and nothing
	// inline (the CSP would block it anyway).
	tags := scriptTag.FindAllString(page, -1)
	require.Equal(t, []string{
		`<script src="` + scalarPath + `">`,
		`<script src="` + initPath + `">`,
	}, tags)
	require.Equal(t, len(tags), strings.Count(page, "</script>"))
	require.NotContains(t, page, "://", "no absolute (outside) URLs")
}

func TestDocsInitConfig(t *testing.T) {
	t.Parallel()
	js := string(docsInitJS)
	// These settings keep the page from contacting outside hosts; the
	// browser test proves the effect, this pins the intent.
	for _, setting := range []string{
		"Scalar.createApiReference('#app'",
		"url: '/api/v1/openapi.json'",
		"withDefaultFonts: false",
		"telemetry: false",
		"agent: { disabled: true }",
		"mcp: { disabled: true }",
		"showDeveloperTools: 'never'",
	} {
		require.Contains(t, js, setting)
	}
}
