package catalog_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/provider/catalog"
)

// schemas returns every schema document of every type, named.
func schemas(t *testing.T) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	add := func(name string, s *catalog.Schema) {
		var doc map[string]any
		require.NoError(t, json.Unmarshal(s.JSON(), &doc), name)
		out[name] = doc
	}
	r := registry(t, true)
	for _, k := range catalog.Kinds {
		for _, typ := range r.List(k) {
			add(typ.ID+".config", typ.Config)
			add(typ.ID+".credential", typ.Credential)
			for _, a := range typ.APIs {
				add(typ.ID+".apis."+a.ID, a.Settings)
			}
			if typ.Environment != nil {
				add(typ.ID+".environment", typ.Environment.Schema)
			}
		}
	}
	return out
}

// walkObjects calls f on every object schema in doc.
func walkObjects(doc map[string]any, f func(map[string]any)) {
	if doc["type"] == "object" {
		f(doc)
	}
	for _, key := range []string{"properties"} {
		if m, ok := doc[key].(map[string]any); ok {
			for _, sub := range m {
				walkObjects(sub.(map[string]any), f)
			}
		}
	}
	if items, ok := doc["items"].(map[string]any); ok {
		walkObjects(items, f)
	}
}

func TestEverySchemaIsAClosedDraft2020Object(t *testing.T) {
	t.Parallel()
	all := schemas(t)
	// config and credential of 42 types, 24 model APIs, 8 environment schemas
	require.Equal(t, 2*42+24+8, len(all))
	for name, doc := range all {
		require.Equal(t, "https://json-schema.org/draft/2020-12/schema", doc["$schema"], name)
		require.Equal(t, "object", doc["type"], name)
		walkObjects(doc, func(o map[string]any) {
			require.Equal(t, false, o["additionalProperties"], "%s: unknown members must be refused", name)
		})
	}
}

func TestCredentialMembersAreWriteOnly(t *testing.T) {
	t.Parallel()
	r := registry(t, true)
	for _, k := range catalog.Kinds {
		for _, typ := range r.List(k) {
			var doc struct {
				Properties map[string]map[string]any `json:"properties"`
				Required   []string                  `json:"required"`
			}
			require.NoError(t, json.Unmarshal(typ.Credential.JSON(), &doc))
			require.Equal(t, typ.CredentialRequired, len(doc.Required) > 0, "%s: credential_required matches the schema", typ.ID)
			for name, p := range doc.Properties {
				if name == "access_key_id" || name == "token_id" {
					continue // identifiers, not secrets
				}
				require.Equal(t, true, p["writeOnly"], "%s.%s", typ.ID, name)
			}
		}
	}
}

// TestDefaultsAreValid validates an object made of every member's default: the
// only failures allowed are members that are required and have no default.
func TestDefaultsAreValid(t *testing.T) {
	t.Parallel()
	r := registry(t, true)
	check := func(name string, s *catalog.Schema, validate func(any) error) {
		var doc struct {
			Properties map[string]map[string]any `json:"properties"`
		}
		require.NoError(t, json.Unmarshal(s.JSON(), &doc))
		defaults := map[string]any{}
		for p, sub := range doc.Properties {
			if d, ok := sub["default"]; ok {
				defaults[p] = d
			}
		}
		err := validate(defaults)
		if err == nil {
			return
		}
		e, ok := apperr.As(err)
		require.True(t, ok, name)
		for _, d := range e.Details {
			require.Equal(t, "is required", d.Reason, "%s: default of %s", name, d.Field)
		}
	}
	for _, k := range catalog.Kinds {
		for _, typ := range r.List(k) {
			check(typ.ID+".config", typ.Config, typ.ValidateConfig)
			for _, a := range typ.APIs {
				check(typ.ID+"."+a.ID, a.Settings, a.ValidateSettings)
			}
			if typ.Environment != nil {
				check(typ.ID+".environment", typ.Environment.Schema, typ.ValidateEnvironment)
			}
		}
	}
}

func details(t *testing.T, err error) []apperr.Detail {
	t.Helper()
	e, ok := apperr.As(err)
	require.True(t, ok, "want an apperr, got %v", err)
	require.Equal(t, apperr.KindInvalidArgument, e.Kind)
	return e.Details
}

func TestValidateConfig(t *testing.T) {
	t.Parallel()
	r := registry(t, false)
	lookup := func(id string) catalog.Type {
		typ, ok := r.Lookup(id)
		require.True(t, ok, id)
		return typ
	}
	for _, tc := range []struct {
		name string
		typ  string
		in   any
		want []apperr.Detail // nil: valid
	}{
		{"EmptyIsValid", "openai", map[string]any{}, nil},
		{"NilIsEmpty", "openai", nil, nil},
		{"NilMapIsEmpty", "openai", map[string]any(nil), nil},
		{"JSONBytes", "openai", json.RawMessage(`{"project":"proj_1"}`), nil},
		{"Full", "openai", map[string]any{"base_url": "https://proxy.example/v1", "organization": "org-1", "project": "proj_1"}, nil},
		{"NotAURL", "openai", map[string]any{"base_url": "api.openai.com"}, []apperr.Detail{
			{Field: "config.base_url", Reason: "must be a valid uri"},
		}},
		{"UnknownAndWrongType", "openai", map[string]any{"organisation": "org-1", "project": 7}, []apperr.Detail{
			{Field: "config.organisation", Reason: "is not a known field"},
			{Field: "config.project", Reason: "must be a string"},
		}},
		{"RequiredMissing", "azure_openai", map[string]any{"api_version": "2024-10-21"}, []apperr.Detail{
			{Field: "config.endpoint", Reason: "is required"},
		}},
		{"Pattern", "azure_openai", map[string]any{"endpoint": "https://r.openai.azure.com", "api_version": "latest"}, []apperr.Detail{
			{Field: "config.api_version", Reason: "must match the pattern ^[0-9]{4}-[0-9]{2}-[0-9]{2}(-preview)?$"},
		}},
		{"Bedrock", "aws_bedrock", map[string]any{"region": "eu-central-1"}, nil},
		{"DockerHost", "docker", map[string]any{"host": "/var/run/docker.sock"}, []apperr.Detail{
			{Field: "config.host", Reason: "must match the pattern ^(unix:///|tcp://)\\S+$"},
		}},
		{"NotAnObject", "openai", []string{"x"}, []apperr.Detail{{Field: "config", Reason: "must be an object"}}},
		{"SearXNGNeedsItsURL", "searxng", map[string]any{}, []apperr.Detail{{Field: "config.base_url", Reason: "is required"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := lookup(tc.typ).ValidateConfig(tc.in)
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.Equal(t, tc.want, details(t, err))
		})
	}
}

func TestValidateCredentialNeverEchoesTheSecret(t *testing.T) {
	t.Parallel()
	r := registry(t, false)
	lookup := func(id string) catalog.Type { typ, _ := r.Lookup(id); return typ }

	require.NoError(t, lookup("anthropic").ValidateCredential(map[string]any{"api_key": "sk-ant-api03-x"}))
	require.NoError(t, lookup("docker").ValidateCredential(map[string]any{}), "TLS is optional")
	require.NoError(t, lookup("aws_bedrock").ValidateCredential(map[string]any{
		"access_key_id": "AKIAIOSFODNN7EXAMPLE", "secret_access_key": "wJalrXUtnFEMI/K7MDENG", "session_token": "tok",
	}))

	const secret = "sk-very-secret-value"
	for _, tc := range []struct {
		name string
		typ  string
		in   map[string]any
		want []apperr.Detail
	}{
		{"Missing", "openai", map[string]any{}, []apperr.Detail{{Field: "credential.api_key", Reason: "is required"}}},
		{"Empty", "openai", map[string]any{"api_key": ""}, []apperr.Detail{{Field: "credential.api_key", Reason: "must be at least 1 characters"}}},
		{"Misnamed", "openai", map[string]any{"apikey": secret}, []apperr.Detail{
			{Field: "credential.api_key", Reason: "is required"},
			{Field: "credential.apikey", Reason: "is not a known field"},
		}},
		{"PatternKeepsValueOut", "aws_bedrock", map[string]any{"access_key_id": secret, "secret_access_key": secret}, []apperr.Detail{
			{Field: "credential.access_key_id", Reason: "must match the pattern ^[A-Z0-9]{16,128}$"},
		}},
		{"DockerTLSPairs", "docker", map[string]any{"tls_cert": secret}, []apperr.Detail{
			{Field: "credential.tls_key", Reason: "is required when tls_cert is set"},
		}},
		{"NoCredentialTakesNone", "searxng", map[string]any{"api_key": secret}, []apperr.Detail{
			{Field: "credential.api_key", Reason: "is not a known field"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := lookup(tc.typ).ValidateCredential(tc.in)
			require.Equal(t, tc.want, details(t, err))
			require.NotContains(t, err.Error(), secret)
		})
	}
}

func TestValidateSettingsAndEnvironment(t *testing.T) {
	t.Parallel()
	r := registry(t, false)
	openai, _ := r.Lookup("openai")
	responses, ok := openai.API("responses")
	require.True(t, ok)
	_, ok = openai.API("messages")
	require.False(t, ok)
	require.NoError(t, responses.ValidateSettings(map[string]any{"temperature": 0.2, "reasoning_effort": "high", "max_output_tokens": 4096}))
	require.Equal(t, []apperr.Detail{
		{Field: "settings.max_output_tokens", Reason: "must be an integer"},
		{Field: "settings.reasoning_effort", Reason: "must be one of minimal, low, medium, high"},
		{Field: "settings.temperature", Reason: "must be at most 2"},
	}, details(t, responses.ValidateSettings(map[string]any{"temperature": 2.5, "reasoning_effort": "max", "max_output_tokens": 1.5})))

	anthropic, _ := r.Lookup("anthropic")
	msgs, _ := anthropic.API("messages")
	require.Equal(t, []apperr.Detail{
		{Field: "settings.stop_sequences.0", Reason: "must be a string"},
		{Field: "settings.temperature", Reason: "must be at most 1"},
		{Field: "settings.thinking_budget_tokens", Reason: "must be at least 1024"},
	}, details(t, msgs.ValidateSettings(map[string]any{"temperature": 1.5, "thinking_budget_tokens": 100, "stop_sequences": []any{1}})))

	docker, _ := r.Lookup("docker")
	require.NoError(t, docker.ValidateEnvironment(map[string]any{"image": "python:3.13-slim", "cpu": 0.5, "memory_mb": 512}))
	require.Equal(t, []apperr.Detail{
		{Field: "config.image", Reason: "is required"},
		{Field: "config.memory_mb", Reason: "must be at least 64"},
	}, details(t, docker.ValidateEnvironment(map[string]any{"memory_mb": 1})))
	require.Equal(t, []apperr.Detail{{Field: "type", Reason: "openai is not an environment provider type"}}, details(t, openai.ValidateEnvironment(nil)))
}
