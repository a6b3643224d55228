package httpapi_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/client"
	"github.com/svcdev/svc/internal/apitest"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/testfactory"
)

type providerTypesBundle struct {
	h      *apitest.Harness
	viewer *client.ClientWithResponses
}

func setupProviderTypes(t *testing.T, localEnabled bool) *providerTypesBundle {
	t.Helper()
	h := apitest.Start(t, apitest.Options{Configure: func(c *config.Config) { c.Environments.LocalEnabled = localEnabled }})
	admin := testfactory.Bootstrap(t, h.App.Pool)
	viewer := testfactory.AddMember(t, h.App.Pool, admin.OrganizationID, admin.WorkspaceID, testfactory.MemberOpts{WorkspaceRole: "viewer"})
	return &providerTypesBundle{h: h, viewer: h.Client(t, viewer.Token)}
}

// list fetches a kind as a viewer and also decodes the raw items, to see the
// members as a client does (null versus absent).
func (b *providerTypesBundle) list(t *testing.T, kind string) (*client.ProviderTypeList, []map[string]json.RawMessage) {
	t.Helper()
	resp, err := b.viewer.ListProviderTypesWithResponse(t.Context(), kind)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	var raw struct {
		Items []map[string]json.RawMessage `json:"items"`
	}
	require.NoError(t, json.Unmarshal(resp.Body, &raw))
	return resp.JSON200, raw.Items
}

func TestProviderTypesDescribeEveryKind(t *testing.T) {
	t.Parallel()
	b := setupProviderTypes(t, false)
	counts := map[catalog.Kind]int{catalog.KindModel: 21, catalog.KindWeb: 10, catalog.KindEnvironment: 7, catalog.KindConnector: 1, catalog.KindMemory: 2}
	members := []string{"type", "display_name", "configuration_schema", "credential_schema", "credential_required", "setup_url",
		"apis", "operations", "environment_schema", "supports_managed_instances", "supports_stop", "supports_destroy"}
	perKind := map[catalog.Kind][]string{
		catalog.KindModel:       {"apis"},
		catalog.KindWeb:         {"operations"},
		catalog.KindEnvironment: {"environment_schema", "supports_managed_instances", "supports_stop", "supports_destroy"},
	}
	for _, kind := range catalog.Kinds {
		list, raw := b.list(t, string(kind))
		require.EqualValues(t, kind, list.Kind)
		require.Len(t, list.Items, counts[kind], kind)
		names := make([]string, 0, len(list.Items))
		for _, it := range list.Items {
			names = append(names, it.Type)
			require.NotEmpty(t, it.DisplayName)
			require.Equal(t, "https://json-schema.org/draft/2020-12/schema", it.ConfigurationSchema["$schema"], it.Type)
			require.Equal(t, false, it.CredentialSchema["additionalProperties"], it.Type)
			require.Regexp(t, `^https://`, it.SetupUrl.MustGet(), it.Type)
		}
		require.True(t, slices.IsSorted(names), "%s items are sorted by type: %v", kind, names)
		require.NotContains(t, names, catalog.LocalType)
		for i, item := range raw {
			require.Len(t, item, len(members), "%s: a fixed set of members", names[i])
			for _, m := range members {
				require.Contains(t, item, m, names[i])
				isNull := string(item[m]) == "null"
				require.Equal(t, !slices.Contains(members[:6], m) && !slices.Contains(perKind[kind], m), isNull,
					"%s.%s: null exactly when it does not apply to the kind", names[i], m)
			}
		}
	}
}

func TestProviderTypesShowWhatTheRegistryDeclares(t *testing.T) {
	t.Parallel()
	b := setupProviderTypes(t, false)
	find := func(list *client.ProviderTypeList, id string) client.ProviderType {
		for _, it := range list.Items {
			if it.Type == id {
				return it
			}
		}
		t.Fatalf("%s is not listed", id)
		return client.ProviderType{}
	}

	models, _ := b.list(t, "model")
	openai := find(models, "openai")
	require.Equal(t, "OpenAI", openai.DisplayName)
	require.True(t, openai.CredentialRequired)
	props := openai.ConfigurationSchema["properties"].(map[string]any)
	require.Equal(t, "https://api.openai.com/v1", props["base_url"].(map[string]any)["default"])
	apis := openai.Apis.MustGet()
	require.Len(t, apis, 2)
	require.Equal(t, "chat_completions", apis[0].Id)
	require.Equal(t, "responses", apis[1].Id)
	settings := apis[1].SettingsSchema["properties"].(map[string]any)
	require.Contains(t, settings, "reasoning_effort")
	require.Equal(t, false, apis[1].SettingsSchema["additionalProperties"])
	ollama := find(models, "ollama")
	require.False(t, ollama.CredentialRequired)

	web, _ := b.list(t, "web")
	require.ElementsMatch(t, []client.ProviderTypeOperations{"search", "fetch"}, find(web, "firecrawl").Operations.MustGet())
	require.Equal(t, []client.ProviderTypeOperations{"search"}, find(web, "brave").Operations.MustGet())

	envs, _ := b.list(t, "environment")
	docker := find(envs, "docker")
	require.True(t, docker.SupportsManagedInstances.MustGet())
	require.True(t, docker.SupportsStop.MustGet())
	require.True(t, docker.SupportsDestroy.MustGet())
	require.Contains(t, docker.EnvironmentSchema.MustGet()["properties"], "image")
	require.False(t, find(envs, "kubernetes").SupportsStop.MustGet())

	memory, _ := b.list(t, "memory")
	require.Equal(t, []any{"index_host"}, find(memory, "pinecone").ConfigurationSchema["required"])
}

func TestProviderTypesListLocalOnlyWhenEnabled(t *testing.T) {
	t.Parallel()
	b := setupProviderTypes(t, true)
	envs, _ := b.list(t, "environment")
	require.Len(t, envs.Items, 8)
	var local *client.ProviderType
	for i := range envs.Items {
		if envs.Items[i].Type == catalog.LocalType {
			local = &envs.Items[i]
		}
	}
	require.NotNil(t, local, "local is listed when environments.local_enabled is set")
	require.True(t, local.SetupUrl.IsNull(), "local has no vendor page")
	require.False(t, local.CredentialRequired)
	require.False(t, local.SupportsManagedInstances.MustGet())
	models, _ := b.list(t, "model")
	require.Len(t, models.Items, 21)
}

func TestProviderTypesRefusals(t *testing.T) {
	t.Parallel()
	b := setupProviderTypes(t, false)
	for _, kind := range []string{"models", "Model", "local", "provider"} {
		resp, err := b.viewer.ListProviderTypesWithResponse(t.Context(), kind)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, resp.StatusCode(), kind)
		require.EqualValues(t, "not_found", resp.JSON404.Error.Code)
	}
	resp, err := b.h.API.ListProviderTypesWithResponse(t.Context(), "model")
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode())
	require.EqualValues(t, "unauthenticated", resp.JSON401.Error.Code)
}
