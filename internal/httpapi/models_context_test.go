package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/oapi-codegen/nullable"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/client"
)

// TestModelsContextWindow: a model's context window is set on create,
// shown as set (null when not), bounded, more than the answer's
// max_output_tokens, changed and cleared by PATCH and kept when left out.
func TestModelsContextWindow(t *testing.T) {
	t.Parallel()
	b := setupModels(t)
	m := b.mustModel(t, "plain")
	require.True(t, m.ContextWindow.IsNull(), "no window unless one is set")

	create := func(key string, window int, settings client.ModelSettings) *client.CreateModelResponse {
		return b.newModel(t, b.api, client.CreateModelRequest{Key: key, ProviderId: b.openai.Id, Api: "chat_completions", Model: "local-llama",
			Settings: &settings, ContextWindow: nullable.NewNullableWithValue(window)})
	}
	for _, bad := range []int{0, 1023, 100_000_001} {
		resp := create("bad", bad, client.ModelSettings{})
		require.Equal(t, http.StatusBadRequest, resp.StatusCode(), string(resp.Body))
		require.Equal(t, []string{"context_window"}, detailFields(resp.JSON400))
	}
	resp := create("bad", 4096, client.ModelSettings{"max_output_tokens": 4096})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode(), string(resp.Body))
	require.Equal(t, []string{"context_window"}, detailFields(resp.JSON400))
	require.Contains(t, string(resp.Body), "max_output_tokens")

	resp = create("local", 32768, client.ModelSettings{"max_output_tokens": 2048})
	require.Equal(t, http.StatusCreated, resp.StatusCode(), string(resp.Body))
	m = *resp.JSON201
	require.Equal(t, 32768, m.ContextWindow.MustGet())
	require.Equal(t, "model.created:api,context_window,enabled,key,model,provider_id,settings", b.modelAudit(t, "local")[0])

	// Left out, it stays; a value changes it; null clears it.
	name := "local-llama-2"
	up := b.patch(t, b.api, "local", modelETag(m), client.UpdateModelRequest{Model: &name})
	require.Equal(t, http.StatusOK, up.StatusCode(), string(up.Body))
	require.Equal(t, 32768, up.JSON200.ContextWindow.MustGet())
	m = *up.JSON200
	up = b.patch(t, b.api, "local", modelETag(m), client.UpdateModelRequest{ContextWindow: nullable.NewNullableWithValue(65536)})
	require.Equal(t, http.StatusOK, up.StatusCode(), string(up.Body))
	require.Equal(t, 65536, up.JSON200.ContextWindow.MustGet())
	require.Equal(t, "model.updated:context_window", b.modelAudit(t, "local")[2])
	m = *up.JSON200
	// A window at or under the kept max_output_tokens is refused.
	up = b.patch(t, b.api, "local", modelETag(m), client.UpdateModelRequest{ContextWindow: nullable.NewNullableWithValue(2048)})
	require.Equal(t, http.StatusBadRequest, up.StatusCode(), string(up.Body))
	require.Equal(t, []string{"context_window"}, detailFields(up.JSON400))
	up = b.patch(t, b.api, "local", modelETag(m), client.UpdateModelRequest{ContextWindow: nullable.NewNullNullable[int]()})
	require.Equal(t, http.StatusOK, up.StatusCode(), string(up.Body))
	require.True(t, up.JSON200.ContextWindow.IsNull())
	got, err := b.api.GetModelWithResponse(t.Context(), "local")
	require.NoError(t, err)
	require.Equal(t, *up.JSON200, *got.JSON200)
}
