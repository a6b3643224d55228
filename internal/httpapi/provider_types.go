package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/oapi-codegen/nullable"

	"github.com/svcdev/svc/gen/api"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/provider/catalog"
)

// ProviderTypeHandlers implements GET /api/v1/provider-types/{kind}. The
// installed types never change while the process runs, so each kind's answer is
// marshalled once, at construction, and served from memory.
type ProviderTypeHandlers struct {
	lists map[string]providerTypeList
}

// newProviderTypeHandlers marshals the answers for every kind once, from the
// registry of installed types (the local environment type only when
// environments.local_enabled is set).
func newProviderTypeHandlers(reg *catalog.Registry) (*ProviderTypeHandlers, error) {
	h := &ProviderTypeHandlers{lists: make(map[string]providerTypeList, len(catalog.Kinds))}
	for _, k := range catalog.Kinds {
		body, err := json.Marshal(api.ProviderTypeList{Kind: api.ProviderKind(k), Items: mapAll(reg.List(k), toAPIProviderType)})
		if err != nil {
			return nil, fmt.Errorf("marshal %s provider types: %w", k, err)
		}
		h.lists[string(k)] = body
	}
	return h, nil
}

// ListProviderTypes describes the installed types of a kind; an unknown kind is 404.
func (h *ProviderTypeHandlers) ListProviderTypes(_ context.Context, req api.ListProviderTypesRequestObject) (api.ListProviderTypesResponseObject, error) {
	body, ok := h.lists[req.Kind]
	if !ok {
		return nil, apperr.NotFound("provider kind")
	}
	return body, nil
}

// providerTypeList is a marshalled api.ProviderTypeList answered as is.
type providerTypeList []byte

// VisitListProviderTypesResponse writes the 200 answer.
func (b providerTypeList) VisitListProviderTypesResponse(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(b)
	return err
}

func toAPIProviderType(t catalog.Type) api.ProviderType {
	out := api.ProviderType{
		Type:                     t.ID,
		DisplayName:              t.DisplayName,
		ConfigurationSchema:      schemaDoc(t.Config),
		CredentialSchema:         schemaDoc(t.Credential),
		CredentialRequired:       t.CredentialRequired,
		SetupUrl:                 nullable.NewNullNullable[string](),
		Apis:                     nullable.NewNullNullable[[]api.ProviderTypeAPI](),
		Operations:               nullable.NewNullNullable[[]api.ProviderTypeOperations](),
		EnvironmentSchema:        nullable.NewNullNullable[map[string]any](),
		SupportsManagedInstances: nullable.NewNullNullable[bool](),
		SupportsStop:             nullable.NewNullNullable[bool](),
		SupportsDestroy:          nullable.NewNullNullable[bool](),
	}
	if t.SetupURL != "" {
		out.SetupUrl.Set(t.SetupURL)
	}
	if t.APIs != nil {
		out.Apis.Set(mapAll(t.APIs, func(a catalog.API) api.ProviderTypeAPI {
			return api.ProviderTypeAPI{Id: a.ID, SettingsSchema: schemaDoc(a.Settings)}
		}))
	}
	if t.Operations != nil {
		out.Operations.Set(mapAll(t.Operations, func(o catalog.Operation) api.ProviderTypeOperations {
			return api.ProviderTypeOperations(o)
		}))
	}
	if e := t.Environment; e != nil {
		out.EnvironmentSchema.Set(schemaDoc(e.Schema))
		out.SupportsManagedInstances.Set(e.ManagedInstances)
		out.SupportsStop.Set(e.Stop)
		out.SupportsDestroy.Set(e.Destroy)
	}
	return out
}

// schemaDoc is a schema document as a view member.
func schemaDoc(s *catalog.Schema) map[string]any { return s.Document() }
