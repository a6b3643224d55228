// Package vendortest serves local stand-ins for the vendors whose providers
// svc probes. Each speaks its vendor's real wire protocol for the probe's
// request: the request path and query, the authentication header and scheme,
// the version headers the vendor requires, and the vendor's answer and error
// shapes (taken from the vendors' API references). Memory vendors also hold
// namespaces and serve their namespace delete (see namespace.go). A request
// that departs from the protocol is answered as the vendor would (404 or 400)
// and recorded, so a test can say exactly what was wrong. For tests only.
package vendortest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Vendor describes one vendor's probe protocol.
type Vendor struct {
	// Type is the provider type id.
	Type string
	// BaseMember is the config member that holds the base URL, and BasePath the
	// path the vendor's base URL carries (its default, such as /v1).
	BaseMember string
	BasePath   string
	// Path is the probe's path below the base URL, and Query the parameters it
	// must send ("*" accepts any non-empty value; a value ending in "*"
	// accepts that prefix).
	Path  string
	Query map[string]string
	// Headers must be present with these values.
	Headers map[string]string
	// AuthHeader and AuthPrefix carry the key; empty AuthHeader: no auth.
	AuthHeader string
	AuthPrefix string
	// OK is the answer to a good request; Refused and RefusedBody answer a
	// wrong key (the vendors' own status and error body).
	OK          string
	Refused     int
	RefusedBody string
	// Config is the rest of a provider config the test needs.
	Config map[string]any
	// NamespaceDelete is the path, below the base URL, of the vendor's
	// namespace delete (DELETE, no query, no body; the probe's Headers and
	// auth apply), with {namespace}; empty for vendors without namespaces.
	// Deleted answers the delete of a namespace that exists (200), and
	// NamespaceMissing (with {namespace}) one that does not (404).
	NamespaceDelete  string
	Deleted          string
	NamespaceMissing string
}

// Server is a running vendor stand-in.
type Server struct {
	*httptest.Server
	Vendor Vendor
	// Key is the credential the server accepts.
	Key string

	mu         sync.Mutex
	problems   []string
	requests   []*http.Request
	namespaces map[string]bool
	faults     []fault
}

// Start serves v until the test ends, accepting key.
func Start(t testing.TB, v Vendor, key string) *Server {
	t.Helper()
	s := &Server{Vendor: v, Key: key, namespaces: map[string]bool{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// BaseURL is the base URL a provider config points at this server with.
func (s *Server) BaseURL() string { return s.URL + s.Vendor.BasePath }

// ProviderConfig is a config that makes a provider of the vendor's type call
// this server.
func (s *Server) ProviderConfig() map[string]any {
	cfg := map[string]any{s.Vendor.BaseMember: s.BaseURL()}
	for k, v := range s.Vendor.Config {
		cfg[k] = v
	}
	return cfg
}

// Problems returns the departures from the protocol seen so far.
func (s *Server) Problems() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.problems...)
}

// Requests returns the requests served so far.
func (s *Server) Requests() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests = append(s.requests, r.Clone(r.Context()))
	s.mu.Unlock()
	v := s.Vendor
	if r.Method == http.MethodDelete && v.NamespaceDelete != "" {
		s.serveNamespaceDelete(w, r)
		return
	}
	if r.Method != http.MethodGet || r.URL.Path != v.BasePath+v.Path {
		s.problem(w, http.StatusNotFound, "request %s %s, want GET %s", r.Method, r.URL.Path, v.BasePath+v.Path)
		return
	}
	for name, want := range v.Query {
		got := r.URL.Query().Get(name)
		if !matches(got, want) {
			s.problem(w, http.StatusBadRequest, "query %s = %q, want %q", name, got, want)
			return
		}
	}
	for name, want := range v.Headers {
		if got := r.Header.Get(name); got != want {
			s.problem(w, http.StatusBadRequest, "header %s = %q, want %q", name, got, want)
			return
		}
	}
	if !s.authorized(w, r) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprint(w, v.OK)
}

// authorized answers a request without the accepted key as the vendor does
// and reports whether the key was right.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	v := s.Vendor
	if v.AuthHeader == "" || r.Header.Get(v.AuthHeader) == v.AuthPrefix+s.Key {
		return true
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(v.Refused)
	_, _ = fmt.Fprint(w, strings.ReplaceAll(v.RefusedBody, "{key}", r.Header.Get(v.AuthHeader)))
	return false
}

func (s *Server) problem(w http.ResponseWriter, status int, format string, args ...any) {
	s.mu.Lock()
	s.problems = append(s.problems, fmt.Sprintf(format, args...))
	s.mu.Unlock()
	http.Error(w, `{"error":{"message":"not found"}}`, status)
}

func matches(got, want string) bool {
	switch {
	case want == "*":
		return got != ""
	case strings.HasSuffix(want, "*"):
		return strings.HasPrefix(got, strings.TrimSuffix(want, "*")) && len(got) > len(want)-1
	default:
		return got == want
	}
}

// openAIList is an OpenAI-style model list and openAIRefused its 401 body,
// which, like OpenAI's, repeats part of the key.
const (
	openAIList    = `{"object":"list","data":[{"id":"model-a","object":"model","created":1715367049,"owned_by":"system"}]}`
	openAIRefused = `{"error":{"message":"Incorrect API key provided: {key}. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`
)

// openAIStyle is a vendor serving GET {base}/models with a bearer key.
func openAIStyle(typ, basePath string) Vendor {
	return Vendor{
		Type: typ, BaseMember: "base_url", BasePath: basePath, Path: "/models",
		AuthHeader: "Authorization", AuthPrefix: "Bearer ",
		OK: openAIList, Refused: http.StatusUnauthorized, RefusedBody: openAIRefused,
	}
}

// VendorFor returns the protocol of the type typ, and false when no stand-in
// serves it.
func VendorFor(typ string) (Vendor, bool) {
	for _, v := range Vendors() {
		if v.Type == typ {
			return v, true
		}
	}
	return Vendor{}, false
}

// Vendors lists the protocol of every type whose provider test sends a request.
func Vendors() []Vendor {
	openai := openAIStyle("openai", "/v1")
	openai.Config = map[string]any{"organization": "org-test", "project": "proj_test"}
	openai.Headers = map[string]string{"OpenAI-Organization": "org-test", "OpenAI-Project": "proj_test"}

	together := openAIStyle("together", "/v1")
	together.OK = `[{"id":"meta-llama/Llama-3.3-70B-Instruct-Turbo","object":"model","created":1733443200,"type":"chat","display_name":"Llama 3.3 70B"}]`

	perplexity := openAIStyle("perplexity", "")
	perplexity.Path = "/async/chat/completions"
	perplexity.OK = `{"requests":[],"next_token":null}`
	perplexity.RefusedBody = `{"error":{"message":"Invalid API key","type":"invalid_api_key","code":401}}`

	return []Vendor{
		openai,
		openAIStyle("mistral", "/v1"),
		openAIStyle("groq", "/openai/v1"),
		together,
		openAIStyle("fireworks", "/inference/v1"),
		openAIStyle("deepseek", ""),
		openAIStyle("xai", "/v1"),
		perplexity,
		openAIStyle("cerebras", "/v1"),
		openAIStyle("openai_compatible", "/v1"),
		openAIStyle("huggingface", "/v1"),
		{
			Type: "anthropic", BaseMember: "base_url", Path: "/v1/models",
			Query:      map[string]string{"limit": "1"},
			Headers:    map[string]string{"anthropic-version": "2023-06-01"},
			AuthHeader: "x-api-key",
			OK:         `{"data":[{"type":"model","id":"claude-sonnet-4-5","display_name":"Claude Sonnet 4.5","created_at":"2025-09-29T00:00:00Z"}],"has_more":true,"first_id":"claude-sonnet-4-5","last_id":"claude-sonnet-4-5"}`,
			Refused:    http.StatusUnauthorized,
			RefusedBody: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},` +
				`"request_id":"req_011CTest"}`,
		},
		{
			Type: "google_gemini", BaseMember: "base_url", Path: "/v1beta/models",
			Query:      map[string]string{"pageSize": "1"},
			AuthHeader: "x-goog-api-key",
			OK:         `{"models":[{"name":"models/gemini-2.5-flash","version":"001","displayName":"Gemini 2.5 Flash","inputTokenLimit":1048576,"outputTokenLimit":65536,"supportedGenerationMethods":["generateContent","countTokens"]}],"nextPageToken":"Ch1tb2RlbHMvZ2VtaW5p"}`,
			Refused:    http.StatusBadRequest,
			RefusedBody: `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT",` +
				`"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}`,
		},
		{
			Type: "azure_openai", BaseMember: "endpoint", Path: "/openai/models",
			Query:       map[string]string{"api-version": "2024-10-21"},
			AuthHeader:  "api-key",
			OK:          `{"data":[{"id":"gpt-4o-2024-08-06","status":"succeeded","created_at":1722902400,"capabilities":{"chat_completion":true},"object":"model"}],"object":"list"}`,
			Refused:     http.StatusUnauthorized,
			RefusedBody: `{"error":{"code":"401","message":"Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."}}`,
		},
		{
			Type: "cohere", BaseMember: "base_url", Path: "/v1/models",
			Query:      map[string]string{"page_size": "1"},
			AuthHeader: "Authorization", AuthPrefix: "Bearer ",
			OK:          `{"models":[{"name":"command-a-03-2025","endpoints":["chat"],"finetuned":false,"context_length":256000}],"next_page_token":"Y29tbWFuZA"}`,
			Refused:     http.StatusUnauthorized,
			RefusedBody: `{"id":"5f7ab3c1-0000-4000-8000-000000000000","message":"invalid api token"}`,
		},
		{
			Type: "ollama", BaseMember: "base_url", Path: "/api/tags",
			AuthHeader: "Authorization", AuthPrefix: "Bearer ",
			OK:          `{"models":[{"name":"llama3.2:latest","model":"llama3.2:latest","modified_at":"2025-05-04T17:37:44.706015396-07:00","size":2019393189,"digest":"a80c4f17acd55265feec403c7aef86be0c25983ab279d83f3bcd3abbcb5b8b72","details":{"format":"gguf","family":"llama","parameter_size":"3.2B","quantization_level":"Q4_K_M"}}]}`,
			Refused:     http.StatusUnauthorized,
			RefusedBody: `{"error":"unauthorized"}`,
		},
		{
			Type: "composio", BaseMember: "base_url", Path: "/api/v3/auth_configs",
			Query:       map[string]string{"limit": "1"},
			AuthHeader:  "x-api-key",
			OK:          `{"items":[],"next_cursor":null,"total_pages":0,"current_page":1,"total_items":0}`,
			Refused:     http.StatusUnauthorized,
			RefusedBody: `{"error":{"message":"Invalid API key","code":10401,"slug":"Auth_InvalidApiKey","status":401,"request_id":"req_test"}}`,
		},
		{
			// Data plane API 2025-04: DELETE /namespaces/{namespace} answers
			// 200 with an empty DeleteResponse; errors are rpcStatus objects
			// (gRPC code 5 is NOT_FOUND).
			Type: "pinecone", BaseMember: "index_host", Path: "/vectors/list",
			Query:      map[string]string{"namespace": "svc-probe-*", "limit": "1"},
			Headers:    map[string]string{"X-Pinecone-API-Version": "2025-04"},
			AuthHeader: "Api-Key",
			OK:         `{"vectors":[],"namespace":"svc-probe","usage":{"readUnits":1}}`,
			Refused:    http.StatusUnauthorized,
			RefusedBody: `{"error":{"code":"UNAUTHENTICATED","message":"Invalid API Key"},` +
				`"status":401}`,
			NamespaceDelete:  "/namespaces/{namespace}",
			Deleted:          `{}`,
			NamespaceMissing: `{"code":5,"message":"Namespace not found","details":[]}`,
		},
		{
			// DELETE /v2/namespaces/:namespace answers 200 {"status":"OK"};
			// errors are {"status":"error","error":"..."}.
			Type: "turbopuffer", BaseMember: "base_url", Path: "/v1/namespaces",
			Query:      map[string]string{"prefix": "svc-probe-*", "page_size": "1"},
			AuthHeader: "Authorization", AuthPrefix: "Bearer ",
			OK:               `{"namespaces":[]}`,
			Refused:          http.StatusUnauthorized,
			RefusedBody:      `{"status":"error","error":"unauthorized: invalid API key"}`,
			Config:           map[string]any{"region": "gcp-us-central1"},
			NamespaceDelete:  "/v2/namespaces/{namespace}",
			Deleted:          `{"status":"OK"}`,
			NamespaceMissing: `{"status":"error","error":"namespace '{namespace}' was not found"}`,
		},
	}
}
