package llm_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/svcdev/svc/internal/llm"
	"github.com/svcdev/svc/internal/provider/catalog"
)

// wantCall is what a provider's first request must look like.
type wantCall struct {
	path    string
	query   string
	headers map[string]string // exact values
	absent  []string          // headers that must not be sent
	model   string            // the body's model member ("" when the model is in the path)
	check   func(t *testing.T, r received)
}

// factoryCase is a provider of one type pointing at the stand-in at base.
type factoryCase struct {
	config     func(base string) map[string]any
	credential func(base string) map[string]any // nil: none stored
	// redirect sends every request to the stand-in, for types whose config
	// cannot name another host (google_vertex).
	redirect bool
	calls    map[string]wantCall // by API id
}

func bearer(path string) wantCall {
	return wantCall{path: path, headers: map[string]string{"Authorization": "Bearer " + testKey}, model: "m"}
}

func baseOnly(base string) map[string]any { return map[string]any{"base_url": base} }

var keyCred = map[string]any{"api_key": testKey}

func key(string) map[string]any { return keyCred }

// factoryCases covers every model provider type; TestForProviderEveryType
// fails for a registered type missing here.
var factoryCases = map[string]factoryCase{
	"aws_bedrock": {
		config: func(b string) map[string]any { return map[string]any{"region": "eu-west-1", "endpoint": b} },
		credential: func(string) map[string]any {
			return map[string]any{"access_key_id": "AKIAIOSFODNN7EXAMPLE", "secret_access_key": testKey}
		},
		calls: map[string]wantCall{catalog.APIConverse: {path: "/model/m/converse-stream", absent: []string{"X-Amz-Security-Token"},
			check: func(t *testing.T, r received) {
				if !authRE.MatchString(r.header.Get("Authorization")) {
					t.Errorf("Authorization = %q", r.header.Get("Authorization"))
				}
			}}},
	},
	"cohere": {config: baseOnly, credential: key, calls: map[string]wantCall{catalog.APIChat: bearer("/v2/chat")}},
	"google_gemini": {
		config: baseOnly, credential: key,
		calls: map[string]wantCall{catalog.APIGenerateContent: {path: "/v1beta/models/m:streamGenerateContent", query: "alt=sse",
			headers: map[string]string{"x-goog-api-key": testKey}, absent: []string{"Authorization"}}},
	},
	"google_vertex": {
		config: func(string) map[string]any {
			return map[string]any{"project_id": "my-project-1", "location": "europe-west4"}
		},
		credential: func(base string) map[string]any {
			return map[string]any{"service_account_json": serviceAccountJSON(base + "/token")}
		},
		redirect: true,
		calls: map[string]wantCall{
			catalog.APIGenerateContent: {path: "/v1/projects/my-project-1/locations/europe-west4/publishers/google/models/m:streamGenerateContent", query: "alt=sse",
				headers: map[string]string{"Authorization": "Bearer " + vertexToken, "X-Test-Host": "europe-west4-aiplatform.googleapis.com"}},
			catalog.APIMessages: {path: "/v1/projects/my-project-1/locations/europe-west4/publishers/anthropic/models/m:streamRawPredict",
				headers: map[string]string{"Authorization": "Bearer " + vertexToken, "X-Test-Host": "europe-west4-aiplatform.googleapis.com"},
				absent:  []string{"anthropic-version", "x-api-key"},
				check: func(t *testing.T, r received) {
					if r.body["anthropic_version"] != llm.VertexAnthropicVersion {
						t.Errorf("anthropic_version = %v", r.body["anthropic_version"])
					}
				}},
		},
	},
	"openai": {
		config: func(b string) map[string]any {
			return map[string]any{"base_url": b + "/v1", "organization": "org-1", "project": "proj_1"}
		},
		credential: key,
		calls: map[string]wantCall{
			catalog.APIChatCompletions: {path: "/v1/chat/completions", model: "m",
				headers: map[string]string{"Authorization": "Bearer " + testKey, "OpenAI-Organization": "org-1", "OpenAI-Project": "proj_1"},
				check: func(t *testing.T, r received) {
					if r.body["max_completion_tokens"] != 77.0 {
						t.Errorf("max_completion_tokens = %v", r.body["max_completion_tokens"])
					}
				}},
			catalog.APIResponses: {path: "/v1/responses", model: "m",
				headers: map[string]string{"Authorization": "Bearer " + testKey, "OpenAI-Organization": "org-1"}},
		},
	},
	"azure_openai": {
		config: func(b string) map[string]any {
			return map[string]any{"endpoint": b, "deployment": "dep-default"}
		},
		credential: key,
		calls: map[string]wantCall{
			catalog.APIChatCompletions: {path: "/openai/deployments/m/chat/completions", query: "api-version=2024-10-21",
				headers: map[string]string{"api-key": testKey}, absent: []string{"Authorization"}, model: "m"},
			catalog.APIResponses: {path: "/openai/v1/responses", headers: map[string]string{"api-key": testKey}, absent: []string{"Authorization"}, model: "m"},
		},
	},
	"anthropic": {
		config: baseOnly, credential: key,
		calls: map[string]wantCall{catalog.APIMessages: {path: "/v1/messages", model: "m",
			headers: map[string]string{"x-api-key": testKey, "anthropic-version": llm.AnthropicVersion}, absent: []string{"Authorization"}}},
	},
	"claude_subscription": {
		config: baseOnly, credential: func(string) map[string]any { return map[string]any{"oauth_token": testKey} },
		calls: map[string]wantCall{catalog.APIMessages: {path: "/v1/messages", model: "m",
			headers: map[string]string{"Authorization": "Bearer " + testKey, "anthropic-beta": llm.ClaudeOAuthBeta}, absent: []string{"x-api-key"}}},
	},
	"openai_compatible": {config: baseOnly, credential: key, calls: map[string]wantCall{catalog.APIChatCompletions: bearer("/chat/completions")}},
	"groq":              {config: baseOnly, credential: key, calls: map[string]wantCall{catalog.APIChatCompletions: bearer("/chat/completions")}},
	"together":          {config: baseOnly, credential: key, calls: map[string]wantCall{catalog.APIChatCompletions: bearer("/chat/completions")}},
	"fireworks":         {config: baseOnly, credential: key, calls: map[string]wantCall{catalog.APIChatCompletions: bearer("/chat/completions")}},
	"deepseek":          {config: baseOnly, credential: key, calls: map[string]wantCall{catalog.APIChatCompletions: bearer("/chat/completions")}},
	"xai":               {config: baseOnly, credential: key, calls: map[string]wantCall{catalog.APIChatCompletions: bearer("/chat/completions")}},
	"mistral":           {config: baseOnly, credential: key, calls: map[string]wantCall{catalog.APIChatCompletions: bearer("/chat/completions")}},
	"cerebras":          {config: baseOnly, credential: key, calls: map[string]wantCall{catalog.APIChatCompletions: bearer("/chat/completions")}},
	"perplexity":        {config: baseOnly, credential: key, calls: map[string]wantCall{catalog.APIChatCompletions: bearer("/chat/completions")}},
	"huggingface":       {config: baseOnly, credential: key, calls: map[string]wantCall{catalog.APIChatCompletions: bearer("/chat/completions")}},
	"ollama": {
		config: baseOnly, credential: nil, // no key stored: no auth header
		calls: map[string]wantCall{catalog.APIChatCompletions: {path: "/v1/chat/completions", model: "m", absent: []string{"Authorization"}}},
	},
	"openrouter": {
		config: func(b string) map[string]any {
			return map[string]any{"base_url": b, "site_url": "https://example.com", "app_name": "svc"}
		},
		credential: key,
		calls: map[string]wantCall{catalog.APIChatCompletions: {path: "/chat/completions", model: "m",
			headers: map[string]string{"Authorization": "Bearer " + testKey, "HTTP-Referer": "https://example.com", "X-Title": "svc"}}},
	},
	"portkey": {
		config: func(b string) map[string]any {
			return map[string]any{"base_url": b, "config_id": "pc-abc", "provider": "@openai-prod"}
		},
		credential: func(string) map[string]any {
			return map[string]any{"api_key": testKey, "virtual_key": "vk-secret-1234"}
		},
		calls: map[string]wantCall{catalog.APIChatCompletions: {path: "/chat/completions", model: "m",
			headers: map[string]string{"x-portkey-api-key": testKey, "x-portkey-virtual-key": "vk-secret-1234",
				"x-portkey-config": "pc-abc", "x-portkey-provider": "@openai-prod"},
			absent: []string{"Authorization"}}},
	},
}

// answerFor answers a request in the protocol its path names, with the final
// turn of the scripted conversation.
func answerFor(t *testing.T) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for _, p := range protocols {
			if p.matches(r.URL.Path) {
				p.serve(w, r)
				return
			}
		}
		t.Errorf("no protocol serves %s", r.URL.Path)
		http.Error(w, "unknown", http.StatusNotFound)
	}
}

// protocol is one wire protocol the stand-in speaks.
type protocol struct {
	matches func(path string) bool
	serve   http.HandlerFunc
}

var protocols = []protocol{
	{matches: func(p string) bool { return strings.HasSuffix(p, "/converse-stream") }, serve: sse(cvFinalTurn...)},
	{matches: func(p string) bool { return strings.HasSuffix(p, "/responses") }, serve: sse(rsFinalTurn...)},
	{matches: func(p string) bool { return p == "/v2/chat" }, serve: sse(coFinalTurn...)},
	{matches: func(p string) bool { return p == "/token" }, serve: tokenEndpoint(nil)},
	{matches: func(p string) bool { return strings.HasSuffix(p, ":streamGenerateContent") }, serve: sse(gcFinalTurn...)},
	{matches: func(p string) bool { return strings.HasSuffix(p, ":streamRawPredict") }, serve: sse(amFinalTurn...)},
	{matches: func(p string) bool { return strings.HasSuffix(p, "/chat/completions") }, serve: sse(ccFinalTurn...)},
	{matches: func(p string) bool { return strings.HasSuffix(p, "/v1/messages") }, serve: sse(amFinalTurn...)},
}

func TestForProviderEveryType(t *testing.T) {
	t.Parallel()
	reg, err := catalog.New(catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range reg.List(catalog.KindModel) {
		c, ok := factoryCases[typ.ID]
		if !ok {
			t.Errorf("model provider type %s has no factory case", typ.ID)
			continue
		}
		for _, api := range typ.APIs {
			want, ok := c.calls[api.ID]
			if !ok {
				t.Errorf("%s: API %s has no expectation", typ.ID, api.ID)
				continue
			}
			t.Run(typ.ID+"/"+api.ID, func(t *testing.T) {
				t.Parallel()
				v := newVendor(t, answerFor(t), answerFor(t))
				spec := llm.ProviderSpec{
					Type: typ.ID, API: api.ID, Config: mustRaw(t, c.config(v.srv.URL)),
					HTTPClient: v.srv.Client(), Retry: fastRetry,
				}
				if c.redirect {
					spec.HTTPClient = redirectTo(v.srv)
				}
				if c.credential != nil {
					spec.Credential = mustRaw(t, c.credential(v.srv.URL))
				}
				m, err := llm.ForProvider(spec)
				if err != nil {
					t.Fatalf("ForProvider: %v", err)
				}
				req := hello
				req.MaxOutputTokens = 77
				r, err := m.Stream(context.Background(), req, func(llm.Event) error { return nil })
				if err != nil {
					t.Fatalf("Stream: %v", err)
				}
				if r.Message.Text != finalText {
					t.Errorf("text = %q", r.Message.Text)
				}
				all := v.requests()
				got := all[len(all)-1]
				if got.path != want.path || got.query != want.query {
					t.Errorf("request to %s?%s, want %s?%s", got.path, got.query, want.path, want.query)
				}
				for h, val := range want.headers {
					if got.header.Get(h) != val {
						t.Errorf("header %s = %q, want %q", h, got.header.Get(h), val)
					}
				}
				for _, h := range want.absent {
					if got.header.Get(h) != "" {
						t.Errorf("header %s sent: %q", h, got.header.Get(h))
					}
				}
				if m, _ := got.body["model"].(string); m != want.model {
					t.Errorf("body model = %q, want %q", m, want.model)
				}
				if want.check != nil {
					want.check(t, got)
				}
			})
		}
	}
}

func TestForProviderRefusals(t *testing.T) {
	t.Parallel()
	client := http.DefaultClient
	cases := []struct {
		name string
		spec llm.ProviderSpec
		want string
	}{
		{"unknown type", llm.ProviderSpec{Type: "nope", HTTPClient: client}, "not a model provider type"},
		{"web type", llm.ProviderSpec{Type: "tavily", HTTPClient: client}, "not a model provider type"},
		{"API not declared", llm.ProviderSpec{Type: "groq", API: catalog.APIMessages, Credential: mustRaw(t, keyCred), HTTPClient: client}, "does not speak"},
		{"missing credential", llm.ProviderSpec{Type: "groq", HTTPClient: client}, "needs a credential"},
		{"no client", llm.ProviderSpec{Type: "groq", Credential: mustRaw(t, keyCred)}, "HTTP client"},
		{"bad config", llm.ProviderSpec{Type: "openai_compatible", Config: json.RawMessage(`{}`), HTTPClient: client}, "config"},
		{"bad credential", llm.ProviderSpec{Type: "groq", Credential: json.RawMessage(`{"api_key": 12}`), HTTPClient: client}, "credential"},
	}
	for _, c := range cases {
		_, err := llm.ForProvider(c.spec)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error = %v, want one mentioning %q", c.name, err, c.want)
		}
	}
}

// The type's default base URL is used when the config names none.
func TestForProviderDefaultBaseURL(t *testing.T) {
	t.Parallel()
	var got string
	client := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		got = r.URL.String()
		return &http.Response{StatusCode: 401, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
	})}
	m, err := llm.ForProvider(llm.ProviderSpec{Type: "groq", Credential: mustRaw(t, keyCred), HTTPClient: client, Retry: fastRetry})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Stream(context.Background(), hello, func(llm.Event) error { return nil })
	asError(t, err)
	if got != "https://api.groq.com/openai/v1/chat/completions" {
		t.Fatalf("sent to %s", got)
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func mustRaw(t *testing.T, v any) json.RawMessage {
	t.Helper()
	return json.RawMessage(mustJSON(t, v))
}
