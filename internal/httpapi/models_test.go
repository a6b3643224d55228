package httpapi_test

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/client"
)

// modelsBundle is the providers bundle plus a model provider of each API
// family the tests move between.
type modelsBundle struct {
	*providersBundle
	openai    client.Provider // chat_completions, responses
	anthropic client.Provider // messages
}

func setupModels(t *testing.T) *modelsBundle {
	t.Helper()
	b := setupProviders(t)
	return &modelsBundle{providersBundle: b, openai: b.createModel(t), anthropic: b.createProvider(t, "anthropic")}
}

// createProvider makes a model provider of the type with a credential.
func (b *providersBundle) createProvider(t *testing.T, typ string) client.Provider {
	t.Helper()
	cred := client.ProviderCredential{"api_key": secretKey}
	resp, err := b.api.CreateModelProviderWithResponse(t.Context(), nil, client.CreateModelProviderRequest{Type: typ, Name: typ, Credential: &cred})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, resp.StatusCode(), string(resp.Body))
	return *resp.JSON201
}

// newModel creates a model through the typed client and returns the answer.
func (b *modelsBundle) newModel(t *testing.T, api *client.ClientWithResponses, body client.CreateModelRequest) *client.CreateModelResponse {
	t.Helper()
	resp, err := api.CreateModelWithResponse(t.Context(), nil, body)
	require.NoError(t, err)
	return resp
}

// mustModel creates a chat_completions model on the openai provider.
func (b *modelsBundle) mustModel(t *testing.T, key string) client.Model {
	t.Helper()
	settings := client.ModelSettings{"temperature": 1.5}
	resp := b.newModel(t, b.api, client.CreateModelRequest{Key: key, ProviderId: b.openai.Id, Api: "chat_completions", Model: "gpt-4.1-mini", Settings: &settings})
	require.Equal(t, http.StatusCreated, resp.StatusCode(), string(resp.Body))
	return *resp.JSON201
}

func modelETag(m client.Model) string { return `"` + m.Key + ":" + strconv.Itoa(m.Version) + `"` }

func TestModelsCreateReadList(t *testing.T) {
	t.Parallel()
	b := setupModels(t)
	resp := b.newModel(t, b.api, client.CreateModelRequest{Key: "gpt-4.1-mini", ProviderId: b.openai.Id, Api: "chat_completions",
		Model: "gpt-4.1-mini-2025-04-14", Settings: &client.ModelSettings{"temperature": 0.2, "max_output_tokens": 1024}})
	require.Equal(t, http.StatusCreated, resp.StatusCode(), string(resp.Body))
	m := *resp.JSON201
	require.Equal(t, `"gpt-4.1-mini:1"`, resp.HTTPResponse.Header.Get("ETag"), "SPEC 9.4: exactly \"key:version\"")
	require.Equal(t, "/api/v1/models/gpt-4.1-mini", resp.HTTPResponse.Header.Get("Location"))
	require.Equal(t, b.openai.Id, m.ProviderId)
	require.Equal(t, "chat_completions", m.Api)
	require.Equal(t, "gpt-4.1-mini-2025-04-14", m.Model)
	require.Equal(t, map[string]any{"temperature": 0.2, "max_output_tokens": float64(1024)}, map[string]any(m.Settings))
	require.True(t, m.Enabled, "enabled by default")
	require.Equal(t, 1, m.Version)
	require.Equal(t, b.admin.PrincipalID, m.CreatedById)
	require.Equal(t, b.admin.PrincipalID, m.UpdatedById)
	require.NotContains(t, string(resp.Body), `"id"`, "a model has no id field")

	got, err := b.api.GetModelWithResponse(t.Context(), "gpt-4.1-mini")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, got.StatusCode())
	require.Equal(t, m, *got.JSON200)
	require.Equal(t, `"gpt-4.1-mini:1"`, got.HTTPResponse.Header.Get("ETag"))

	// A viewer reads but cannot create.
	viewer := b.h.Client(t, b.viewer.Token)
	vg, err := viewer.GetModelWithResponse(t.Context(), "gpt-4.1-mini")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, vg.StatusCode())
	vc := b.newModel(t, viewer, client.CreateModelRequest{Key: "viewer-made", ProviderId: b.openai.Id, Api: "chat_completions", Model: "m"})
	require.Equal(t, http.StatusForbidden, vc.StatusCode())

	// Disabled at creation, and settings left out are the empty object.
	off := false
	d := b.newModel(t, b.api, client.CreateModelRequest{Key: "claude", ProviderId: b.anthropic.Id, Api: "messages", Model: "claude-sonnet-4-5", Enabled: &off})
	require.Equal(t, http.StatusCreated, d.StatusCode(), string(d.Body))
	require.False(t, d.JSON201.Enabled)
	require.Empty(t, d.JSON201.Settings)

	var action, fieldsCSV string
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(),
		`SELECT action, array_to_string(changed_fields, ',') FROM audit_event WHERE subject_type = 'model' AND subject_id = 'gpt-4.1-mini'`).Scan(&action, &fieldsCSV))
	require.Equal(t, "model.created", action)
	require.Equal(t, "api,enabled,key,model,provider_id,settings", fieldsCSV)

	// Duplicate key in the workspace: 409 already_exists, nothing changed.
	dup := b.newModel(t, b.api, client.CreateModelRequest{Key: "gpt-4.1-mini", ProviderId: b.anthropic.Id, Api: "messages", Model: "other"})
	require.Equal(t, http.StatusConflict, dup.StatusCode())
	require.Equal(t, client.ErrorCodeAlreadyExists, dup.JSON409.Error.Code)
	got, err = b.api.GetModelWithResponse(t.Context(), "gpt-4.1-mini")
	require.NoError(t, err)
	require.Equal(t, m, *got.JSON200)
}

// TestModelsKeyEdges: only keys matching
// ^[a-z0-9][a-z0-9.-]{0,127}$ are accepted.
func TestModelsKeyEdges(t *testing.T) {
	t.Parallel()
	b := setupModels(t)
	longest := "a" + strings.Repeat("b", 127)
	for _, key := range []string{longest, "0", "a.b-c", "9x"} {
		m := b.mustModel(t, key)
		require.Equal(t, key, m.Key)
		got, err := b.api.GetModelWithResponse(t.Context(), key)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, got.StatusCode())
	}
	refused := []string{
		longest + "c",                // 129 characters
		"GPT-4",                      // uppercase
		"Gpt",                        // one uppercase letter
		"-gpt",                       // leading '-'
		".gpt",                       // leading '.'
		"",                           // empty
		"gpt_4",                      // underscore
		"gpt 4",                      // space
		"gpt/4",                      // slash
		"gpt-4\u043e",                // Cyrillic o look-alike
		"\u0261pt",                   // Latin small script g look-alike
		"gpt\uff0d4",                 // fullwidth hyphen-minus
		"gpt-4\u200b",                // zero-width space
		"caf\u00e9",                  // accented letter
		"gpt-4\n",                    // trailing newline
		"\u0430bc",                   // Cyrillic a
		strings.Repeat("\u0430", 64), // short in characters, long in bytes
	}
	for _, key := range refused {
		resp := b.newModel(t, b.api, client.CreateModelRequest{Key: key, ProviderId: b.openai.Id, Api: "chat_completions", Model: "m"})
		require.Equal(t, http.StatusBadRequest, resp.StatusCode(), "key %q: %s", key, resp.Body)
		require.Equal(t, client.ErrorCodeInvalidArgument, resp.JSON400.Error.Code)
		require.Contains(t, detailFields(resp.JSON400), "key", "key %q", key)
	}
	l, err := b.api.ListModelsWithResponse(t.Context(), &client.ListModelsParams{Limit: new(200)})
	require.NoError(t, err)
	require.Len(t, l.JSON200.Items, 4, "no refused key was stored")
}

func TestModelsProviderReferences(t *testing.T) {
	t.Parallel()
	b := setupModels(t)
	create := func(body client.CreateModelRequest) *client.CreateModelResponse {
		return b.newModel(t, b.api, body)
	}

	// Another workspace's model provider, and an absent id: the same 404 naming provider_id.
	ws, err := b.api.CreateWorkspaceWithResponse(t.Context(), nil, client.CreateWorkspaceRequest{Name: "other"})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, ws.StatusCode(), string(ws.Body))
	other := &providersBundle{h: b.h, admin: b.admin, api: b.h.Client(t, ws.JSON201.ApiKey)}
	foreign := other.createProvider(t, "openai")
	var messages []string
	for _, id := range []string{foreign.Id, "prv_01jd5v6w1q3yb8j8y3tn9z2k7h"} {
		resp := create(client.CreateModelRequest{Key: "x", ProviderId: id, Api: "chat_completions", Model: "m"})
		require.Equal(t, http.StatusNotFound, resp.StatusCode(), string(resp.Body))
		require.Equal(t, []string{"provider_id"}, detailFields(resp.JSON404))
		messages = append(messages, resp.JSON404.Error.Message)
	}
	require.Equal(t, messages[0], messages[1])

	// A provider of another kind: 400 naming provider_id.
	web := b.create(t, "web", map[string]any{"type": "tavily", "name": "Tavily", "credential": map[string]any{"api_key": secretKey}})
	resp := create(client.CreateModelRequest{Key: "x", ProviderId: web["id"].(string), Api: "chat_completions", Model: "m"})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode(), string(resp.Body))
	require.Equal(t, []string{"provider_id"}, detailFields(resp.JSON400))

	// An API the type does not speak, and settings its schema refuses.
	resp = create(client.CreateModelRequest{Key: "x", ProviderId: b.anthropic.Id, Api: "chat_completions", Model: "m"})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode(), string(resp.Body))
	require.Equal(t, []string{"api"}, detailFields(resp.JSON400))
	resp = create(client.CreateModelRequest{Key: "x", ProviderId: b.anthropic.Id, Api: "messages", Model: "m",
		Settings: &client.ModelSettings{"temperature": 1.5, "no_such_setting": true}})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode(), string(resp.Body))
	got := detailFields(resp.JSON400)
	slices.Sort(got)
	require.Equal(t, []string{"settings.no_such_setting", "settings.temperature"}, got, "dotted field paths")

	// A disabled provider: 409 disabled.
	off := false
	p := b.patchModel(t, b.anthropic.Id, etagOf(b.anthropic), client.UpdateModelProviderRequest{Enabled: &off})
	require.Equal(t, http.StatusOK, p.StatusCode(), string(p.Body))
	resp = create(client.CreateModelRequest{Key: "x", ProviderId: b.anthropic.Id, Api: "messages", Model: "m"})
	require.Equal(t, http.StatusConflict, resp.StatusCode(), string(resp.Body))
	require.Equal(t, client.ErrorCodeDisabled, resp.JSON409.Error.Code)

	l, err := b.api.ListModelsWithResponse(t.Context(), nil)
	require.NoError(t, err)
	require.Empty(t, l.JSON200.Items, "no refused model was stored")
}

func TestModelsListPages(t *testing.T) {
	t.Parallel()
	b := setupModels(t)
	var keys []string
	for i := range 7 {
		keys = append(keys, b.mustModel(t, "m-"+strconv.Itoa(i)).Key)
	}
	slices.Reverse(keys) // newest first
	var seen []string
	var cursor *string
	pages := 0
	for {
		resp, err := b.api.ListModelsWithResponse(t.Context(), &client.ListModelsParams{Limit: new(3), Cursor: cursor})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
		pages++
		for _, m := range resp.JSON200.Items {
			seen = append(seen, m.Key)
		}
		if resp.JSON200.NextCursor.IsNull() {
			break
		}
		c := resp.JSON200.NextCursor.MustGet()
		cursor = &c
		require.Less(t, pages, 5)
	}
	require.Equal(t, 3, pages)
	require.Equal(t, keys, seen, "every model once, newest first")

	bad := "not-a-cursor!"
	resp, err := b.api.ListModelsWithResponse(t.Context(), &client.ListModelsParams{Cursor: &bad})
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode())
}

func TestModelsCreateIsIdempotent(t *testing.T) {
	t.Parallel()
	b := setupModels(t)
	body := map[string]any{"key": "retry", "provider_id": b.openai.Id, "api": "responses", "model": "gpt-5"}
	status, first, hdr := b.do(t, http.MethodPost, "/api/v1/models", body, "Idempotency-Key", "k-1")
	require.Equal(t, http.StatusCreated, status, first)
	status, again, hdr2 := b.do(t, http.MethodPost, "/api/v1/models", body, "Idempotency-Key", "k-1")
	require.Equal(t, http.StatusCreated, status, again)
	require.Equal(t, "true", hdr2.Get("Idempotent-Replayed"))
	require.Equal(t, first, again)
	require.Equal(t, hdr.Get("ETag"), hdr2.Get("ETag"))
	// Without the key the retry is a second create: the key is taken.
	status, _, _ = b.do(t, http.MethodPost, "/api/v1/models", body)
	require.Equal(t, http.StatusConflict, status)
}
