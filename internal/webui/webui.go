// Package webui serves the interactive API reference at /api/v1/docs (Scalar,
// vendored); the console lives in internal/console. Everything is embedded in the binary and served from this origin only,
// so the pages work offline and under a strict Content-Security-Policy.
//
// The handlers are plain echo handlers; the caller registers the routes:
//
//	e.GET("/api/v1/docs", webui.DocsPage)
//	e.GET("/api/v1/docs/assets/:name", webui.DocsAsset)
//
// They also answer HEAD correctly (headers only) if the caller routes it, for
// example with e.Match([]string{http.MethodGet, http.MethodHead}, ...).
//
// Keep response-compressing middleware (echo's middleware.Gzip) off these
// routes, or skip them in its Skipper: the Scalar bundle already goes out
// gzip-encoded and would be compressed twice.
//
// The Scalar bundle is vendored by scripts/vendor-scalar.sh.
package webui

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"
)

// ScalarAsset is the file name under which the vendored Scalar bundle is
// served: GET /api/v1/docs/assets/scalar-1.72.1.js. The version is part of the
// name, so the response can be cached as immutable.
const ScalarAsset = "scalar-1.72.1.js"

// InitAsset is the file name of the script that configures Scalar, served at
// GET /api/v1/docs/assets/docs-init.js. It is not versioned, so browsers
// revalidate it on every load (cheap, thanks to its ETag).
const InitAsset = "docs-init.js"

// ContentSecurityPolicy is sent with every response of this package. Scalar
// injects its stylesheet as an inline <style> element, hence 'unsafe-inline'
// for styles; scripts are limited to files from this origin.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; " +
	"style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

const (
	contentTypeHTML = "text/html; charset=utf-8"
	contentTypeJS   = "text/javascript; charset=utf-8"

	cacheImmutable = "public, max-age=31536000, immutable"
	cacheRevalid   = "no-cache"
)

var (
	//go:embed assets/scalar-1.72.1.js.gz
	scalarGzip []byte
	//go:embed assets/docs-init.js
	docsInitJS []byte
	//go:embed assets/docs.html
	docsHTML []byte
)

// representation is one concrete body with its validator.
type representation struct {
	body     []byte
	etag     string // strong, quoted
	encoding string // Content-Encoding value, "" for identity
}

// resource is something this package serves. Plain resources have a single
// identity representation. The Scalar bundle is embedded gzip-compressed
// (1.26 MB instead of 4.35 MB) and served as is to clients that accept gzip;
// for the rare client that does not, it is decompressed once, on first use.
type resource struct {
	contentType  string
	cacheControl string
	plain        func() (representation, error)
	gzipped      *representation // nil when there is no pre-compressed form
}

var (
	docsPage = newPlainResource(docsHTML, contentTypeHTML, cacheRevalid)

	// docsAssets is the complete set of files served under
	// /api/v1/docs/assets/; any other name is a 404.
	docsAssets = map[string]*resource{
		ScalarAsset: newGzipResource(scalarGzip, contentTypeJS, cacheImmutable),
		InitAsset:   newPlainResource(docsInitJS, contentTypeJS, cacheRevalid),
	}
)

// etagOf returns a strong entity tag derived from the content. The suffix
// keeps tags of different representations of one resource distinct, as
// required for strong validators (RFC 9110, section 8.8.1).
func etagOf(body []byte, suffix string) string {
	sum := sha256.Sum256(body)
	return `"` + hex.EncodeToString(sum[:16]) + suffix + `"`
}

// negotiate picks the representation to send for req: the pre-compressed one
// when the client accepts gzip, the identity one otherwise.
func (r *resource) negotiate(req *http.Request) (representation, error) {
	if r.gzipped != nil && acceptsGzip(req.Header.Values(echo.HeaderAcceptEncoding)) {
		return *r.gzipped, nil
	}
	return r.plain()
}

func newPlainResource(body []byte, contentType, cacheControl string) *resource {
	rep := representation{body: body, etag: etagOf(body, "")}
	return &resource{
		contentType:  contentType,
		cacheControl: cacheControl,
		plain:        func() (representation, error) { return rep, nil },
	}
}

// newGzipResource wraps embedded gzip data. Both ETags are derived from the
// compressed bytes, so neither needs the decompressed body at start-up.
func newGzipResource(gz []byte, contentType, cacheControl string) *resource {
	// One hash serves both tags (it runs at start-up of every command, over 1.26 MB).
	identityETag := etagOf(gz, "")
	gzRep := representation{body: gz, etag: strings.TrimSuffix(identityETag, `"`) + `-gzip"`, encoding: "gzip"}
	return &resource{
		contentType:  contentType,
		cacheControl: cacheControl,
		gzipped:      &gzRep,
		plain: sync.OnceValues(func() (representation, error) {
			body, err := gunzip(gz)
			if err != nil {
				return representation{}, fmt.Errorf("webui: decompress embedded asset: %w", err)
			}
			return representation{body: body, etag: identityETag}, nil
		}),
	}
}

func gunzip(gz []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	return io.ReadAll(zr)
}

// DocsPage serves the interactive API reference page (GET /api/v1/docs). The
// page loads the spec from /api/v1/openapi.json, which the caller serves.
func DocsPage(c echo.Context) error {
	return serve(c, docsPage)
}

// DocsAsset serves the scripts of the API reference page
// (GET /api/v1/docs/assets/:name): ScalarAsset and InitAsset. Any other name
// yields echo.ErrNotFound.
func DocsAsset(c echo.Context) error {
	res, ok := docsAssets[c.Param("name")]
	if !ok {
		// The 404 body is rendered by the caller's error handler; it still
		// gets this package's security headers.
		setSecurityHeaders(c.Response().Header())
		return echo.ErrNotFound
	}
	return serve(c, res)
}

// setSecurityHeaders applies the headers every response of this package
// carries, including 304s and errors raised after it is called.
func setSecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
}

// serve writes res to c: it picks the representation from Accept-Encoding,
// answers conditional requests with 304, and omits the body for HEAD.
func serve(c echo.Context, res *resource) error {
	req, resp := c.Request(), c.Response()
	h := resp.Header()
	setSecurityHeaders(h)

	if res.gzipped != nil {
		// The body depends on Accept-Encoding, for 304s as well.
		h.Add(echo.HeaderVary, echo.HeaderAcceptEncoding)
	}
	rep, err := res.negotiate(req)
	if err != nil {
		return err // only on a corrupt embed, which the tests rule out
	}

	h.Set(echo.HeaderCacheControl, res.cacheControl)
	h.Set("ETag", rep.etag)
	if etagMatches(req.Header.Values("If-None-Match"), rep.etag) {
		return c.NoContent(http.StatusNotModified)
	}

	h.Set(echo.HeaderContentType, res.contentType)
	h.Set(echo.HeaderContentLength, strconv.Itoa(len(rep.body)))
	if rep.encoding != "" {
		h.Set(echo.HeaderContentEncoding, rep.encoding)
	}
	resp.WriteHeader(http.StatusOK)
	if req.Method == http.MethodHead {
		return nil
	}
	_, err = resp.Write(rep.body)
	return err
}
