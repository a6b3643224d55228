package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/svcdev/svc/internal/provider/catalog"
)

// ProviderSpec is a model provider as the engine holds it: its type, the model
// API to speak, its config, its decrypted credential and the client to send
// through.
type ProviderSpec struct {
	// Type is the provider type's id (openai, anthropic, aws_bedrock...).
	Type string
	// API is the model API id (catalog.APIChatCompletions...); empty picks the
	// type's first declared API.
	API string
	// Config is the provider's config object; members it leaves out take the
	// schema's defaults.
	Config json.RawMessage
	// Credential is the decrypted credential object, or nil when none is stored.
	Credential json.RawMessage
	// HTTPClient is the endpoint policy's guarded client (timeout 0). Required.
	HTTPClient *http.Client
	// Retry bounds retries; the zero value is DefaultRetry.
	Retry RetryPolicy
	// Headers are the provider's extra headers (decrypted), sent with every
	// request after the type's own; they cannot replace the auth header.
	Headers map[string]string
	// Registry is the process's provider type registry; nil builds one.
	Registry *catalog.Registry
}

// ClaudeOAuthBeta is the anthropic-beta value a claude_subscription provider
// sends with its OAuth token.
const ClaudeOAuthBeta = "oauth-2025-04-20"

// ForProvider returns the adapter serving p: the provider type's API with the
// type's base URL (the config's or the documented default), auth scheme and
// the extra headers its config and credential carry. It refuses a type or API
// it does not know, and a config or credential its type's schema refuses (the
// errors never repeat credential values).
func ForProvider(p ProviderSpec) (Model, error) {
	reg := p.Registry
	if reg == nil {
		var err error
		if reg, err = catalog.New(catalog.Options{}); err != nil {
			return nil, fmt.Errorf("llm: provider types: %w", err)
		}
	}
	t, ok := reg.Lookup(p.Type)
	if !ok || t.Kind != catalog.KindModel {
		return nil, fmt.Errorf("llm: %q is not a model provider type", p.Type)
	}
	api := p.API
	if api == "" {
		api = t.APIs[0].ID
	}
	if _, ok := t.API(api); !ok {
		return nil, fmt.Errorf("llm: provider type %s does not speak the %s API", t.ID, api)
	}
	if p.HTTPClient == nil {
		return nil, errors.New("llm: a provider needs the endpoint policy's HTTP client")
	}
	s, err := newSpecValues(t, p)
	if err != nil {
		return nil, err
	}
	build, ok := builderFor(t.ID)
	if !ok {
		return nil, fmt.Errorf("llm: provider type %s has no adapter", t.ID)
	}
	m, err := build(s, api)
	if err != nil {
		return nil, fmt.Errorf("llm: provider type %s, API %s: %w", t.ID, api, err)
	}
	return m, nil
}

// specValues is a provider's config (with defaults) and credential, read as
// strings, and the endpoint every adapter starts from.
type specValues struct {
	config     map[string]any
	credential map[string]any
	client     *http.Client
	retry      RetryPolicy
	headers    map[string]string
}

func newSpecValues(t catalog.Type, p ProviderSpec) (specValues, error) {
	cfg, err := decodeObject(p.Config)
	if err != nil {
		return specValues{}, fmt.Errorf("llm: provider config: %w", err)
	}
	if err := t.ValidateConfig(cfg); err != nil {
		return specValues{}, fmt.Errorf("llm: provider config: %w", err)
	}
	for name, def := range t.Config.Defaults() {
		if _, ok := cfg[name]; !ok {
			cfg[name] = def
		}
	}
	var cred map[string]any
	if len(bytes.TrimSpace(p.Credential)) > 0 && string(bytes.TrimSpace(p.Credential)) != "null" {
		if cred, err = decodeObject(p.Credential); err != nil {
			return specValues{}, errors.New("llm: provider credential is not a JSON object")
		}
		if err := t.ValidateCredential(cred); err != nil {
			return specValues{}, fmt.Errorf("llm: provider credential: %w", err)
		}
	} else if t.CredentialRequired {
		return specValues{}, fmt.Errorf("llm: provider type %s needs a credential", t.ID)
	}
	return specValues{config: cfg, credential: cred, client: p.HTTPClient, retry: p.Retry, headers: p.Headers}, nil
}

func decodeObject(raw json.RawMessage) (map[string]any, error) {
	out := map[string]any{}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return out, nil
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, errors.New("not a JSON object")
	}
	return out, nil
}

// cfg is a config member as a string ("" when absent).
func (s specValues) cfg(name string) string {
	v, _ := s.config[name].(string)
	return v
}

// cred is a credential member as a string ("" when absent).
func (s specValues) cred(name string) string {
	v, _ := s.credential[name].(string)
	return v
}

// endpoint is the Endpoint at base with the credential's api_key.
func (s specValues) endpoint(base string) Endpoint {
	return Endpoint{BaseURL: strings.TrimSuffix(base, "/"), APIKey: s.cred("api_key"), HTTPClient: s.client, Retry: s.retry, Headers: s.withHeaders(nil)}
}

// withHeaders is the type's own headers h with the provider's extra headers
// added; an extra header never replaces one of the type's.
func (s specValues) withHeaders(h map[string]string) map[string]string {
	out := make(map[string]string, len(h)+len(s.headers))
	for k, v := range s.headers {
		out[k] = v
	}
	for k, v := range h {
		out[k] = v
	}
	return out
}

// builder makes the adapter of one provider type for one of its APIs (which
// ForProvider has checked the type declares).
type builder func(s specValues, api string) (Model, error)

// builderFor returns the adapters of a model provider type. A type added to
// internal/provider/catalog without a case here fails the factory's test.
func builderFor(id string) (builder, bool) {
	switch id {
	case "openai":
		return buildOpenAI, true
	case "azure_openai":
		return buildAzure, true
	case "anthropic":
		return buildAnthropic, true
	case "claude_subscription":
		return buildClaudeSubscription, true
	case "openai_compatible", "groq", "together", "fireworks", "deepseek", "xai",
		"mistral", "cerebras", "perplexity", "huggingface":
		return buildBearerChat, true
	case "ollama":
		return buildOllama, true
	case "openrouter":
		return buildOpenRouter, true
	case "portkey":
		return buildPortkey, true
	case "google_gemini":
		return buildGemini, true
	case "google_vertex":
		return buildVertex, true
	case "cohere":
		return buildCohere, true
	case "aws_bedrock":
		return buildBedrock, true
	}
	return nil, false
}

// buildBedrock signs with the credential's IAM keys; the config's endpoint
// overrides the region's runtime endpoint (a VPC endpoint).
func buildBedrock(s specValues, _ string) (Model, error) {
	return NewConverse(s.endpoint(s.cfg("endpoint")), ConverseOptions{
		Region: s.cfg("region"), AccessKeyID: s.cred("access_key_id"),
		SecretAccessKey: s.cred("secret_access_key"), SessionToken: s.cred("session_token"),
	}), nil
}

func buildCohere(s specValues, _ string) (Model, error) {
	return NewCohereChat(s.endpoint(s.cfg("base_url"))), nil
}

func buildGemini(s specValues, _ string) (Model, error) {
	return NewGenerateContent(s.endpoint(s.cfg("base_url"))), nil
}

func buildOpenAI(s specValues, api string) (Model, error) {
	ep := s.endpoint(s.cfg("base_url"))
	ep.Headers = s.withHeaders(map[string]string{"OpenAI-Organization": s.cfg("organization"), "OpenAI-Project": s.cfg("project")})
	if api == catalog.APIResponses {
		return NewResponses(ep), nil
	}
	return NewChatCompletions(ep, ChatCompletionsOptions{MaxTokensParam: "max_completion_tokens"}), nil
}

// buildAzure serves chat completions at
// {endpoint}/openai/deployments/{model}/chat/completions?api-version=...
// and responses at {endpoint}/openai/v1/responses (the v1 API, which takes no
// api-version), both with the api-key header. The model's vendor name is the
// deployment; the config's deployment is used when the request names none.
func buildAzure(s specValues, api string) (Model, error) {
	base := strings.TrimSuffix(s.cfg("endpoint"), "/") + "/openai"
	var m Model
	if api == catalog.APIResponses {
		ep := s.endpoint(base + "/v1")
		ep.AuthHeader = "api-key"
		m = NewResponses(ep)
	} else {
		ep := s.endpoint(base)
		ep.AuthHeader = "api-key"
		m = NewChatCompletions(ep, ChatCompletionsOptions{
			Query:          url.Values{"api-version": {s.cfg("api_version")}},
			MaxTokensParam: "max_completion_tokens",
			Deployments:    true,
		})
	}
	if d := s.cfg("deployment"); d != "" {
		return defaultModel{Model: m, name: d}, nil
	}
	return m, nil
}

func buildAnthropic(s specValues, _ string) (Model, error) {
	return NewMessages(s.endpoint(s.cfg("base_url"))), nil
}

// buildClaudeSubscription sends the long-lived OAuth token of `claude
// setup-token` as a bearer token with the OAuth beta header; nothing
// interactive is needed.
func buildClaudeSubscription(s specValues, _ string) (Model, error) {
	ep := s.endpoint(s.cfg("base_url"))
	ep.APIKey = s.cred("oauth_token")
	ep.AuthHeader, ep.AuthPrefix = "Authorization", "Bearer "
	ep.Headers = s.withHeaders(map[string]string{"anthropic-beta": ClaudeOAuthBeta})
	return NewMessages(ep), nil
}

// buildBearerChat serves the vendors that speak chat completions at base_url
// with a bearer key (no header when no key is stored).
func buildBearerChat(s specValues, _ string) (Model, error) {
	return NewChatCompletions(s.endpoint(s.cfg("base_url")), ChatCompletionsOptions{}), nil
}

// buildOllama serves Ollama's OpenAI-compatible API under {base_url}/v1.
func buildOllama(s specValues, _ string) (Model, error) {
	return NewChatCompletions(s.endpoint(strings.TrimSuffix(s.cfg("base_url"), "/")+"/v1"), ChatCompletionsOptions{}), nil
}

func buildOpenRouter(s specValues, _ string) (Model, error) {
	ep := s.endpoint(s.cfg("base_url"))
	ep.Headers = s.withHeaders(map[string]string{"HTTP-Referer": s.cfg("site_url"), "X-Title": s.cfg("app_name")})
	return NewChatCompletions(ep, ChatCompletionsOptions{}), nil
}

func buildPortkey(s specValues, _ string) (Model, error) {
	ep := s.endpoint(s.cfg("base_url"))
	ep.AuthHeader, ep.AuthPrefix = "x-portkey-api-key", ""
	ep.Headers = s.withHeaders(map[string]string{
		"x-portkey-virtual-key": s.cred("virtual_key"),
		"x-portkey-config":      s.cfg("config_id"),
		"x-portkey-provider":    s.cfg("provider"),
	})
	return NewChatCompletions(ep, ChatCompletionsOptions{}), nil
}

// defaultModel fills in the model name of a request that names none (Azure's
// configured deployment).
type defaultModel struct {
	Model
	name string
}

// Stream implements Model.
func (d defaultModel) Stream(ctx context.Context, req Request, fn func(Event) error) (Response, error) {
	if req.Model == "" {
		req.Model = d.name
	}
	return d.Model.Stream(ctx, req, fn)
}
