// Package apitest starts svc in-process for tests and checks every HTTP response
// against openapi/openapi.yaml (the contract test): an undocumented status, field,
// content type or error shape fails the test that received it, and so does a
// date-time not written as package timestamp writes it (UTC, six fractional
// digits). CheckSchema holds what is not an HTTP answer of the API (a stream's
// events, a webhook's body) to its schema the same way. Import it only from
// tests.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/svcdev/svc/internal/timestamp"
)

var (
	contractOnce sync.Once
	contractDoc  *openapi3.T
	contractErr  error
)

// Contract loads openapi/openapi.yaml, the source the server and clients are
// generated from, so the tests check responses against what was written.
func Contract(t testing.TB) *openapi3.T {
	t.Helper()
	contractOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		path := filepath.Join(filepath.Dir(file), "..", "..", "openapi", "openapi.yaml")
		loader := openapi3.NewLoader()
		contractDoc, contractErr = loader.LoadFromFile(path)
		if contractErr == nil {
			contractErr = contractDoc.Validate(loader.Context)
		}
	})
	if contractErr != nil {
		t.Fatalf("load contract: %v", contractErr)
	}
	return contractDoc
}

func init() {
	// Pages and scripts are documented as strings; check their presence and content type.
	for _, ct := range []string{"text/html", "text/javascript"} {
		openapi3filter.RegisterBodyDecoder(ct, openapi3filter.PlainBodyDecoder)
	}
}

var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// schemaOptions hold every date-time svc writes to the one form of package
// timestamp; the contract's own format accepts any RFC 3339 time, as svc
// does in requests.
var schemaOptions = []openapi3.SchemaValidationOption{
	openapi3.WithStringFormatValidator("date-time", openapi3.NewRegexpFormatValidator(timestamp.Pattern)),
}

// CheckSchema checks raw, a JSON document svc wrote, against the contract's
// component schema name (its date-times held to package timestamp's form),
// and fails t with every departure.
func CheckSchema(t testing.TB, name string, raw []byte) {
	t.Helper()
	if err := SchemaError(t, name, raw); err != nil {
		t.Errorf("%s does not match the contract: %v\n  document: %.500s", name, err, raw)
	}
}

// SchemaError answers how raw departs from the contract's component schema
// name, as CheckSchema checks it; nil when it matches.
func SchemaError(t testing.TB, name string, raw []byte) error {
	t.Helper()
	ref := Contract(t).Components.Schemas[name]
	if ref == nil || ref.Value == nil {
		t.Fatalf("the contract has no schema %s", name)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return ref.Value.VisitJSON(v, append([]openapi3.SchemaValidationOption{openapi3.MultiErrors(), openapi3.VisitAsResponse()}, schemaOptions...)...)
}

// checker validates responses against the contract.
type checker struct {
	t      testing.TB
	doc    *openapi3.T
	router routers.Router
	// probesOnly is set for a worker, which serves only the probes: every other
	// documented path is absent there.
	probesOnly bool
}

func newChecker(t testing.TB) *checker {
	t.Helper()
	doc := Contract(t)
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatalf("contract router: %v", err)
	}
	return &checker{t: t, doc: doc, router: router}
}

// Transport wraps base so that every response is checked against the contract.
func (c *checker) Transport(base *http.Transport) http.RoundTripper {
	return &checkingTransport{base: base, checker: c}
}

// checkingTransport checks every response against the contract.
type checkingTransport struct {
	base    *http.Transport
	checker *checker
}

// RoundTrip implements http.RoundTripper.
func (t *checkingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if problems := t.checker.check(req, resp, body); len(problems) > 0 {
		t.checker.t.Errorf("contract violation: %s %s -> %d:\n  %s\n  body: %.300s", req.Method, req.URL.Path, resp.StatusCode,
			joinLines(problems), body)
	}
	return resp, nil
}

// CloseIdleConnections closes the base transport's idle connections, so that
// http.Client.CloseIdleConnections reaches them.
func (t *checkingTransport) CloseIdleConnections() { t.base.CloseIdleConnections() }

// check returns every way resp departs from the contract.
func (c *checker) check(req *http.Request, resp *http.Response, body []byte) []string {
	var problems []string
	id := resp.Header.Get("X-Request-Id")
	if !requestIDPattern.MatchString(id) {
		problems = append(problems, fmt.Sprintf("X-Request-Id header missing or malformed: %q", id))
	}
	problems = append(problems, checkCORS(req, resp)...)
	if req.Method == http.MethodOptions && c.documentedPath(req) {
		return append(problems, checkOptions(req, resp, body)...)
	}
	route, params, err := c.router.FindRoute(req)
	if err == nil && c.probesOnly && req.URL.Path != "/healthz" && req.URL.Path != "/readyz" {
		err = errNotServed
	}
	if err != nil {
		// No documented operation: only the router's own answers may come back.
		if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
			problems = append(problems, fmt.Sprintf("undocumented route answered %d (only 404 or 405 may)", resp.StatusCode))
		}
		return append(problems, c.checkError(resp, body, id)...)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, SchemaValidationOptions: schemaOptions},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		problems = append(problems, "response does not match the contract: "+err.Error())
	}
	ref := route.Operation.Responses.Status(resp.StatusCode)
	if ref == nil || ref.Value == nil {
		return problems
	}
	if len(ref.Value.Content) == 0 && len(body) > 0 && req.Method != http.MethodHead {
		problems = append(problems, "a response documented without content has a body")
	}
	if mt := ref.Value.Content.Get("application/json"); mt != nil && mt.Schema != nil && mt.Schema.Ref == errorSchemaRef {
		problems = append(problems, c.checkError(resp, body, id)...)
	}
	return problems
}

// documentedPath reports whether the contract has an operation, of any
// method, on req's path.
func (c *checker) documentedPath(req *http.Request) bool {
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		r := req.Clone(req.Context())
		r.Method = m
		if _, _, err := c.router.FindRoute(r); err == nil {
			return !c.probesOnly || req.URL.Path == "/healthz" || req.URL.Path == "/readyz"
		}
	}
	return false
}

// checkOptions checks the answer to OPTIONS on a documented path, which the
// contract documents once, in its description, rather than per path: 204
// without a body, with Allow and, for a preflight that was allowed, the
// preflight's headers.
func checkOptions(req *http.Request, resp *http.Response, body []byte) []string {
	var problems []string
	if resp.StatusCode != http.StatusNoContent {
		return []string{fmt.Sprintf("OPTIONS on a documented path answered %d (only 204 may)", resp.StatusCode)}
	}
	if len(body) > 0 {
		problems = append(problems, "an OPTIONS answer has a body")
	}
	if resp.Header.Get("Allow") == "" {
		problems = append(problems, "an OPTIONS answer has no Allow header")
	}
	if resp.Header.Get("Access-Control-Allow-Origin") != "" {
		if req.Header.Get("Access-Control-Request-Method") == "" {
			problems = append(problems, "a plain OPTIONS (no Access-Control-Request-Method) was answered as a preflight")
		}
		for _, h := range []string{"Access-Control-Allow-Methods", "Access-Control-Allow-Headers", "Access-Control-Max-Age"} {
			if resp.Header.Get(h) == "" {
				problems = append(problems, "an allowed preflight has no "+h)
			}
		}
	}
	return problems
}

// checkCORS checks the CORS headers any answer carries: an allowed origin is
// the request's own, never "*"; credentials are never allowed; an answer to
// an allowed origin varies by Origin and exposes the headers the contract
// documents on responses.
func checkCORS(req *http.Request, resp *http.Response) []string {
	var problems []string
	if resp.Header.Get("Access-Control-Allow-Credentials") != "" {
		problems = append(problems, "Access-Control-Allow-Credentials is set; the API takes no cookies")
	}
	allowed := resp.Header.Get("Access-Control-Allow-Origin")
	if allowed == "" {
		return problems
	}
	if origin := req.Header.Get("Origin"); allowed != origin {
		problems = append(problems, fmt.Sprintf("Access-Control-Allow-Origin %q is not the request's Origin %q", allowed, origin))
	}
	if !slices.Contains(resp.Header.Values("Vary"), "Origin") {
		problems = append(problems, "an answer to an allowed origin does not vary by Origin")
	}
	if req.Method != http.MethodOptions {
		exposed := map[string]bool{}
		for _, v := range resp.Header.Values("Access-Control-Expose-Headers") {
			for n := range strings.SplitSeq(v, ",") {
				exposed[strings.ToLower(strings.TrimSpace(n))] = true
			}
		}
		for _, h := range []string{"ETag", "Location", "Retry-After", "X-Request-Id"} {
			if !exposed[strings.ToLower(h)] {
				problems = append(problems, "Access-Control-Expose-Headers leaves out "+h)
			}
		}
	}
	return problems
}

const errorSchemaRef = "#/components/schemas/Error"

var errNotServed = errors.New("this role does not serve the path")

// checkError verifies the one error shape and that it carries the request id.
func (c *checker) checkError(resp *http.Response, body []byte, id string) []string {
	schema := c.doc.Components.Schemas["Error"]
	if schema == nil || schema.Value == nil {
		return []string{"contract has no Error schema"}
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return []string{"error body is not JSON: " + err.Error()}
	}
	if err := schema.Value.VisitJSON(v, append([]openapi3.SchemaValidationOption{openapi3.MultiErrors()}, schemaOptions...)...); err != nil {
		return []string{"error body does not match the Error schema: " + err.Error()}
	}
	var e struct {
		Error struct {
			RequestID string `json:"request_id"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	if e.Error.RequestID != id {
		return []string{fmt.Sprintf("error.request_id %q differs from X-Request-Id %q", e.Error.RequestID, id)}
	}
	return nil
}

func joinLines(s []string) string {
	var b bytes.Buffer
	for i, p := range s {
		if i > 0 {
			b.WriteString("\n  ")
		}
		b.WriteString(p)
	}
	return b.String()
}
