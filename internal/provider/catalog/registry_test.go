package catalog_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/provider/catalog"
)

func registry(t *testing.T, localEnabled bool) *catalog.Registry {
	t.Helper()
	r, err := catalog.New(catalog.Options{LocalEnabled: localEnabled})
	require.NoError(t, err) // every schema of every type compiled
	return r
}

func ids(list []catalog.Type) []string {
	out := make([]string, 0, len(list))
	for _, t := range list {
		out = append(out, t.ID)
	}
	return out
}

func TestInstalledTypesMatchTheSpecCounts(t *testing.T) {
	t.Parallel()
	want := map[catalog.Kind][]string{
		catalog.KindModel: {"anthropic", "aws_bedrock", "azure_openai", "cerebras", "claude_subscription", "cohere",
			"deepseek", "fireworks", "google_gemini", "google_vertex", "groq", "huggingface", "mistral", "ollama",
			"openai", "openai_compatible", "openrouter", "perplexity", "portkey", "together", "xai"},
		catalog.KindWeb:         {"brave", "exa", "firecrawl", "google_cse", "jina", "kagi", "searxng", "serpapi", "serper", "tavily"},
		catalog.KindEnvironment: {"daytona", "docker", "e2b", "fly_machines", "kubernetes", "modal", "runloop"},
		catalog.KindConnector:   {"composio"},
		catalog.KindMemory:      {"pinecone", "turbopuffer"},
	}
	counts := map[catalog.Kind]int{catalog.KindModel: 21, catalog.KindWeb: 10, catalog.KindEnvironment: 7, catalog.KindConnector: 1, catalog.KindMemory: 2}
	r := registry(t, false)
	for _, k := range catalog.Kinds {
		got := ids(r.List(k))
		require.Len(t, got, counts[k], k)
		require.Equal(t, want[k], got, "%s types, sorted by id", k)
		for _, typ := range r.List(k) {
			require.Equal(t, k, typ.Kind, typ.ID)
		}
	}
	_, ok := r.Lookup(catalog.LocalType)
	require.False(t, ok, "local is installed only when environments.local_enabled is set")

	withLocal := registry(t, true)
	envs := ids(withLocal.List(catalog.KindEnvironment))
	require.Len(t, envs, 8)
	wantEnvs := append(slices.Clone(want[catalog.KindEnvironment]), "local")
	slices.Sort(wantEnvs)
	require.Equal(t, wantEnvs, envs)
	for _, k := range []catalog.Kind{catalog.KindModel, catalog.KindWeb, catalog.KindConnector, catalog.KindMemory} {
		require.Equal(t, want[k], ids(withLocal.List(k)), "the local toggle touches only environments")
	}
}

func TestParseKind(t *testing.T) {
	t.Parallel()
	for _, k := range catalog.Kinds {
		got, ok := catalog.ParseKind(string(k))
		require.True(t, ok)
		require.Equal(t, k, got)
	}
	for _, s := range []string{"", "models", "Model", "local", "provider"} {
		_, ok := catalog.ParseKind(s)
		require.False(t, ok, s)
	}
}

// TestTestSupportedFollowsSpecRules checks which types cannot be probed
// (docs/decisions/0016-provider-tests.md) and that
// everything else (docker, memory, connector, the other model types) can probe.
func TestTestSupportedFollowsSpecRules(t *testing.T) {
	t.Parallel()
	unsupportedModels := []string{"claude_subscription", "aws_bedrock", "google_vertex", "openrouter", "portkey"}
	r := registry(t, true)
	for _, k := range catalog.Kinds {
		for _, typ := range r.List(k) {
			var want bool
			switch k {
			case catalog.KindWeb:
				want = false // rule 1
			case catalog.KindModel:
				want = !slices.Contains(unsupportedModels, typ.ID) // rule 2
			case catalog.KindEnvironment:
				want = typ.ID == "docker" // rule 3
			case catalog.KindConnector, catalog.KindMemory:
				want = true
			}
			require.Equal(t, want, typ.TestSupported(), typ.ID)
		}
	}
	docker, _ := r.Lookup("docker")
	require.Equal(t, catalog.ProbeEnginePing, docker.Probe, "rule 4: the engine is only pinged")
	for _, typ := range r.List(catalog.KindMemory) {
		require.Equal(t, catalog.ProbeNamespacePage, typ.Probe, "rule 5: %s", typ.ID)
	}
}

func TestKindSpecificDescriptions(t *testing.T) {
	t.Parallel()
	r := registry(t, true)
	apis := map[string][]string{
		"openai": {"chat_completions", "responses"}, "azure_openai": {"chat_completions", "responses"},
		"anthropic": {"messages"}, "claude_subscription": {"messages"},
		"google_gemini": {"generate_content"}, "google_vertex": {"generate_content", "messages"},
		"aws_bedrock": {"converse"}, "cohere": {"chat"},
	}
	for _, typ := range r.List(catalog.KindModel) {
		want, ok := apis[typ.ID]
		if !ok {
			want = []string{"chat_completions"}
		}
		got := make([]string, 0, len(typ.APIs))
		for _, a := range typ.APIs {
			got = append(got, a.ID)
		}
		require.Equal(t, want, got, typ.ID)
		require.Nil(t, typ.Operations, typ.ID)
		require.Nil(t, typ.Environment, typ.ID)
	}
	both := []catalog.Operation{catalog.OperationSearch, catalog.OperationFetch}
	ops := map[string][]catalog.Operation{"tavily": both, "exa": both, "firecrawl": both, "jina": both}
	for _, typ := range r.List(catalog.KindWeb) {
		want, ok := ops[typ.ID]
		if !ok {
			want = []catalog.Operation{catalog.OperationSearch}
		}
		require.ElementsMatch(t, want, typ.Operations, typ.ID)
		require.Nil(t, typ.APIs, typ.ID)
	}
	for _, typ := range r.List(catalog.KindEnvironment) {
		require.NotNil(t, typ.Environment, typ.ID)
		require.Equal(t, typ.ID != "local", typ.Environment.ManagedInstances, typ.ID)
		require.Equal(t, typ.ID != "local", typ.Environment.Destroy, typ.ID)
	}
	k8s, _ := r.Lookup("kubernetes")
	require.False(t, k8s.Environment.Stop, "pods cannot be stopped")
	for _, id := range []string{"ollama", "openai_compatible", "searxng", "docker", "local"} {
		typ, _ := r.Lookup(id)
		require.False(t, typ.CredentialRequired, id)
	}
}

func TestResolveNamesTheTypeField(t *testing.T) {
	t.Parallel()
	r := registry(t, false)
	got, err := r.Resolve(catalog.KindModel, "anthropic")
	require.NoError(t, err)
	require.Equal(t, "anthropic", got.ID)

	for _, tc := range []struct {
		kind   catalog.Kind
		id     string
		reason string
	}{
		{catalog.KindModel, "tavily", `"tavily" is a web provider type, not a model provider type`},
		{catalog.KindModel, "gpt", `unknown model provider type "gpt"`},
		{catalog.KindEnvironment, "local", `unknown environment provider type "local"`},
		{catalog.KindWeb, strings.Repeat("x", 65), "unknown web provider type"},
	} {
		_, err := r.Resolve(tc.kind, tc.id)
		e, ok := apperr.As(err)
		require.True(t, ok, tc.id)
		require.Equal(t, apperr.KindInvalidArgument, e.Kind)
		require.Equal(t, []apperr.Detail{{Field: "type", Reason: tc.reason}}, e.Details)
	}
}
