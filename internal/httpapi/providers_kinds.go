package httpapi

import (
	"context"

	"github.com/svcdev/svc/gen/api"
	"github.com/svcdev/svc/internal/provider"
	"github.com/svcdev/svc/internal/provider/catalog"
)

// The operations of the five provider collections: each maps its generated
// request and response types onto the shared steps in providers.go.

// ListModelProviders lists the model providers of the key's workspace.
func (h *ProviderHandlers) ListModelProviders(ctx context.Context, req api.ListModelProvidersRequestObject) (api.ListModelProvidersResponseObject, error) {
	page, err := h.list(ctx, catalog.KindModel, req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	return api.ListModelProviders200JSONResponse(page), nil
}

// CreateModelProvider creates a model provider.
func (h *ProviderHandlers) CreateModelProvider(ctx context.Context, req api.CreateModelProviderRequestObject) (api.CreateModelProviderResponseObject, error) {
	b := req.Body
	if b == nil {
		return nil, errNoBody
	}
	in := provider.CreateInput{Type: b.Type, Name: b.Name, Config: mapOrNil(b.Config), Credential: mapOrNil(b.Credential)}
	if b.ExtraHeaders != nil {
		in.ExtraHeaders = map[string]string(*b.ExtraHeaders)
		if in.ExtraHeaders == nil {
			in.ExtraHeaders = map[string]string{}
		}
	}
	v, etag, loc, err := h.create(ctx, catalog.KindModel, in)
	if err != nil {
		return nil, err
	}
	return api.CreateModelProvider201JSONResponse{Body: v, Headers: api.CreateModelProvider201ResponseHeaders{ETag: &etag, Location: &loc}}, nil
}

// GetModelProvider reads a model provider of the key's workspace.
func (h *ProviderHandlers) GetModelProvider(ctx context.Context, req api.GetModelProviderRequestObject) (api.GetModelProviderResponseObject, error) {
	v, etag, err := h.get(ctx, catalog.KindModel, req.ProviderId)
	if err != nil {
		return nil, err
	}
	return api.GetModelProvider200JSONResponse{Body: v, Headers: api.GetModelProvider200ResponseHeaders{ETag: &etag}}, nil
}

// UpdateModelProvider changes a model provider.
func (h *ProviderHandlers) UpdateModelProvider(ctx context.Context, req api.UpdateModelProviderRequestObject) (api.UpdateModelProviderResponseObject, error) {
	b := req.Body
	if b == nil {
		return nil, errNoBody
	}
	v, etag, err := h.update(ctx, catalog.KindModel, provider.UpdateInput{
		ID: req.ProviderId, IfMatch: &req.Params.IfMatch, Enabled: b.Enabled, Name: b.Name, Config: mapOrNil(b.Config),
		Credential: change(b.Credential), ExtraHeaders: change(b.ExtraHeaders),
	})
	if err != nil {
		return nil, err
	}
	return api.UpdateModelProvider200JSONResponse{Body: v, Headers: api.UpdateModelProvider200ResponseHeaders{ETag: &etag}}, nil
}

// ListWebProviders lists the web providers of the key's workspace.
func (h *ProviderHandlers) ListWebProviders(ctx context.Context, req api.ListWebProvidersRequestObject) (api.ListWebProvidersResponseObject, error) {
	page, err := h.list(ctx, catalog.KindWeb, req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	return api.ListWebProviders200JSONResponse(page), nil
}

// CreateWebProvider creates a web provider.
func (h *ProviderHandlers) CreateWebProvider(ctx context.Context, req api.CreateWebProviderRequestObject) (api.CreateWebProviderResponseObject, error) {
	in, err := createInput(req.Body)
	if err != nil {
		return nil, err
	}
	v, etag, loc, err := h.create(ctx, catalog.KindWeb, in)
	if err != nil {
		return nil, err
	}
	return api.CreateWebProvider201JSONResponse{Body: v, Headers: api.CreateWebProvider201ResponseHeaders{ETag: &etag, Location: &loc}}, nil
}

// GetWebProvider reads a web provider of the key's workspace.
func (h *ProviderHandlers) GetWebProvider(ctx context.Context, req api.GetWebProviderRequestObject) (api.GetWebProviderResponseObject, error) {
	v, etag, err := h.get(ctx, catalog.KindWeb, req.ProviderId)
	if err != nil {
		return nil, err
	}
	return api.GetWebProvider200JSONResponse{Body: v, Headers: api.GetWebProvider200ResponseHeaders{ETag: &etag}}, nil
}

// UpdateWebProvider changes a web provider.
func (h *ProviderHandlers) UpdateWebProvider(ctx context.Context, req api.UpdateWebProviderRequestObject) (api.UpdateWebProviderResponseObject, error) {
	in, err := updateInput(req.ProviderId, &req.Params.IfMatch, req.Body)
	if err != nil {
		return nil, err
	}
	v, etag, err := h.update(ctx, catalog.KindWeb, in)
	if err != nil {
		return nil, err
	}
	return api.UpdateWebProvider200JSONResponse{Body: v, Headers: api.UpdateWebProvider200ResponseHeaders{ETag: &etag}}, nil
}

// ListEnvironmentProviders lists the environment providers of the key's workspace.
func (h *ProviderHandlers) ListEnvironmentProviders(ctx context.Context, req api.ListEnvironmentProvidersRequestObject) (api.ListEnvironmentProvidersResponseObject, error) {
	page, err := h.list(ctx, catalog.KindEnvironment, req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	return api.ListEnvironmentProviders200JSONResponse(page), nil
}

// CreateEnvironmentProvider creates a environment provider.
func (h *ProviderHandlers) CreateEnvironmentProvider(ctx context.Context, req api.CreateEnvironmentProviderRequestObject) (api.CreateEnvironmentProviderResponseObject, error) {
	in, err := createInput(req.Body)
	if err != nil {
		return nil, err
	}
	v, etag, loc, err := h.create(ctx, catalog.KindEnvironment, in)
	if err != nil {
		return nil, err
	}
	return api.CreateEnvironmentProvider201JSONResponse{Body: v, Headers: api.CreateEnvironmentProvider201ResponseHeaders{ETag: &etag, Location: &loc}}, nil
}

// GetEnvironmentProvider reads a environment provider of the key's workspace.
func (h *ProviderHandlers) GetEnvironmentProvider(ctx context.Context, req api.GetEnvironmentProviderRequestObject) (api.GetEnvironmentProviderResponseObject, error) {
	v, etag, err := h.get(ctx, catalog.KindEnvironment, req.ProviderId)
	if err != nil {
		return nil, err
	}
	return api.GetEnvironmentProvider200JSONResponse{Body: v, Headers: api.GetEnvironmentProvider200ResponseHeaders{ETag: &etag}}, nil
}

// UpdateEnvironmentProvider changes a environment provider.
func (h *ProviderHandlers) UpdateEnvironmentProvider(ctx context.Context, req api.UpdateEnvironmentProviderRequestObject) (api.UpdateEnvironmentProviderResponseObject, error) {
	in, err := updateInput(req.ProviderId, &req.Params.IfMatch, req.Body)
	if err != nil {
		return nil, err
	}
	v, etag, err := h.update(ctx, catalog.KindEnvironment, in)
	if err != nil {
		return nil, err
	}
	return api.UpdateEnvironmentProvider200JSONResponse{Body: v, Headers: api.UpdateEnvironmentProvider200ResponseHeaders{ETag: &etag}}, nil
}

// ListConnectorProviders lists the connector providers of the key's workspace.
func (h *ProviderHandlers) ListConnectorProviders(ctx context.Context, req api.ListConnectorProvidersRequestObject) (api.ListConnectorProvidersResponseObject, error) {
	page, err := h.list(ctx, catalog.KindConnector, req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	return api.ListConnectorProviders200JSONResponse(page), nil
}

// CreateConnectorProvider creates a connector provider.
func (h *ProviderHandlers) CreateConnectorProvider(ctx context.Context, req api.CreateConnectorProviderRequestObject) (api.CreateConnectorProviderResponseObject, error) {
	in, err := createInput(req.Body)
	if err != nil {
		return nil, err
	}
	v, etag, loc, err := h.create(ctx, catalog.KindConnector, in)
	if err != nil {
		return nil, err
	}
	return api.CreateConnectorProvider201JSONResponse{Body: v, Headers: api.CreateConnectorProvider201ResponseHeaders{ETag: &etag, Location: &loc}}, nil
}

// GetConnectorProvider reads a connector provider of the key's workspace.
func (h *ProviderHandlers) GetConnectorProvider(ctx context.Context, req api.GetConnectorProviderRequestObject) (api.GetConnectorProviderResponseObject, error) {
	v, etag, err := h.get(ctx, catalog.KindConnector, req.ProviderId)
	if err != nil {
		return nil, err
	}
	return api.GetConnectorProvider200JSONResponse{Body: v, Headers: api.GetConnectorProvider200ResponseHeaders{ETag: &etag}}, nil
}

// UpdateConnectorProvider changes a connector provider.
func (h *ProviderHandlers) UpdateConnectorProvider(ctx context.Context, req api.UpdateConnectorProviderRequestObject) (api.UpdateConnectorProviderResponseObject, error) {
	in, err := updateInput(req.ProviderId, &req.Params.IfMatch, req.Body)
	if err != nil {
		return nil, err
	}
	v, etag, err := h.update(ctx, catalog.KindConnector, in)
	if err != nil {
		return nil, err
	}
	return api.UpdateConnectorProvider200JSONResponse{Body: v, Headers: api.UpdateConnectorProvider200ResponseHeaders{ETag: &etag}}, nil
}

// ListMemoryProviders lists the memory providers of the key's workspace.
func (h *ProviderHandlers) ListMemoryProviders(ctx context.Context, req api.ListMemoryProvidersRequestObject) (api.ListMemoryProvidersResponseObject, error) {
	page, err := h.list(ctx, catalog.KindMemory, req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	return api.ListMemoryProviders200JSONResponse(page), nil
}

// CreateMemoryProvider creates a memory provider.
func (h *ProviderHandlers) CreateMemoryProvider(ctx context.Context, req api.CreateMemoryProviderRequestObject) (api.CreateMemoryProviderResponseObject, error) {
	in, err := createInput(req.Body)
	if err != nil {
		return nil, err
	}
	v, etag, loc, err := h.create(ctx, catalog.KindMemory, in)
	if err != nil {
		return nil, err
	}
	return api.CreateMemoryProvider201JSONResponse{Body: v, Headers: api.CreateMemoryProvider201ResponseHeaders{ETag: &etag, Location: &loc}}, nil
}

// GetMemoryProvider reads a memory provider of the key's workspace.
func (h *ProviderHandlers) GetMemoryProvider(ctx context.Context, req api.GetMemoryProviderRequestObject) (api.GetMemoryProviderResponseObject, error) {
	v, etag, err := h.get(ctx, catalog.KindMemory, req.ProviderId)
	if err != nil {
		return nil, err
	}
	return api.GetMemoryProvider200JSONResponse{Body: v, Headers: api.GetMemoryProvider200ResponseHeaders{ETag: &etag}}, nil
}

// UpdateMemoryProvider changes a memory provider.
func (h *ProviderHandlers) UpdateMemoryProvider(ctx context.Context, req api.UpdateMemoryProviderRequestObject) (api.UpdateMemoryProviderResponseObject, error) {
	in, err := updateInput(req.ProviderId, &req.Params.IfMatch, req.Body)
	if err != nil {
		return nil, err
	}
	v, etag, err := h.update(ctx, catalog.KindMemory, in)
	if err != nil {
		return nil, err
	}
	return api.UpdateMemoryProvider200JSONResponse{Body: v, Headers: api.UpdateMemoryProvider200ResponseHeaders{ETag: &etag}}, nil
}

// TestModelProvider sends the provider test of a model provider.
func (h *ProviderHandlers) TestModelProvider(ctx context.Context, req api.TestModelProviderRequestObject) (api.TestModelProviderResponseObject, error) {
	res, err := h.test(ctx, catalog.KindModel, req.ProviderId)
	if err != nil {
		return nil, err
	}
	return api.TestModelProvider200JSONResponse(res), nil
}

// TestWebProvider sends the provider test of a web provider.
func (h *ProviderHandlers) TestWebProvider(ctx context.Context, req api.TestWebProviderRequestObject) (api.TestWebProviderResponseObject, error) {
	res, err := h.test(ctx, catalog.KindWeb, req.ProviderId)
	if err != nil {
		return nil, err
	}
	return api.TestWebProvider200JSONResponse(res), nil
}

// TestEnvironmentProvider sends the provider test of a environment provider.
func (h *ProviderHandlers) TestEnvironmentProvider(ctx context.Context, req api.TestEnvironmentProviderRequestObject) (api.TestEnvironmentProviderResponseObject, error) {
	res, err := h.test(ctx, catalog.KindEnvironment, req.ProviderId)
	if err != nil {
		return nil, err
	}
	return api.TestEnvironmentProvider200JSONResponse(res), nil
}

// TestConnectorProvider sends the provider test of a connector provider.
func (h *ProviderHandlers) TestConnectorProvider(ctx context.Context, req api.TestConnectorProviderRequestObject) (api.TestConnectorProviderResponseObject, error) {
	res, err := h.test(ctx, catalog.KindConnector, req.ProviderId)
	if err != nil {
		return nil, err
	}
	return api.TestConnectorProvider200JSONResponse(res), nil
}

// TestMemoryProvider sends the provider test of a memory provider.
func (h *ProviderHandlers) TestMemoryProvider(ctx context.Context, req api.TestMemoryProviderRequestObject) (api.TestMemoryProviderResponseObject, error) {
	res, err := h.test(ctx, catalog.KindMemory, req.ProviderId)
	if err != nil {
		return nil, err
	}
	return api.TestMemoryProvider200JSONResponse(res), nil
}
