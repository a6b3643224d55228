package httpapi

import (
	"context"

	"github.com/oapi-codegen/nullable"

	"github.com/svcdev/svc/gen/api"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/provider"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/secret"
	"github.com/svcdev/svc/internal/timestamp"
)

// (/api/v1/{model,web,environment,connector,memory}-providers). Each operation
// is a thin adapter that calls the one provider service with its kind; the
// per-kind methods are in providers_kinds.go.
type ProviderHandlers struct {
	svc *provider.Service
}

// test sends the provider test and maps its result.
func (h *ProviderHandlers) test(ctx context.Context, k catalog.Kind, id string) (api.ProviderTestResult, error) {
	res, err := h.svc.Test(ctx, auth.CallerFrom(ctx), k, id)
	if err != nil {
		return api.ProviderTestResult{}, err
	}
	out := api.ProviderTestResult{Result: api.ProviderTestResultResult(res.Outcome), DurationMs: int(res.Duration.Milliseconds())}
	if res.Message != "" {
		out.Message = nullable.NewNullableWithValue(res.Message)
	} else {
		out.Message = nullable.NewNullNullable[string]()
	}
	return out, nil
}

// The shared steps of the per-kind handlers.

func (h *ProviderHandlers) list(ctx context.Context, k catalog.Kind, limit *int, cursor *string) (api.ProviderPage, error) {
	p, err := h.svc.List(ctx, auth.CallerFrom(ctx), k, limit, cursor)
	if err != nil {
		return api.ProviderPage{}, err
	}
	return api.ProviderPage{Items: mapAll(p.Items, toAPIProvider), NextCursor: nullableString(p.NextCursor)}, nil
}

// create creates a provider and returns its view, ETag and Location.
func (h *ProviderHandlers) create(ctx context.Context, k catalog.Kind, in provider.CreateInput) (api.Provider, string, string, error) {
	p, err := h.svc.Create(ctx, auth.CallerFrom(ctx), k, in)
	if err != nil {
		return api.Provider{}, "", "", err
	}
	return toAPIProvider(p), p.ETag(), "/api/v1/" + string(k) + "-providers/" + p.ID, nil
}

func (h *ProviderHandlers) get(ctx context.Context, k catalog.Kind, id string) (api.Provider, string, error) {
	p, err := h.svc.Get(ctx, auth.CallerFrom(ctx), k, id)
	if err != nil {
		return api.Provider{}, "", err
	}
	return toAPIProvider(p), p.ETag(), nil
}

func (h *ProviderHandlers) update(ctx context.Context, k catalog.Kind, in provider.UpdateInput) (api.Provider, string, error) {
	p, err := h.svc.Update(ctx, auth.CallerFrom(ctx), k, in)
	if err != nil {
		return api.Provider{}, "", err
	}
	return toAPIProvider(p), p.ETag(), nil
}

// createInput maps a create request of a kind without extra headers.
func createInput(b *api.CreateProviderRequest) (provider.CreateInput, error) {
	if b == nil {
		return provider.CreateInput{}, errNoBody
	}
	return provider.CreateInput{Type: b.Type, Name: b.Name, Config: mapOrNil(b.Config), Credential: mapOrNil(b.Credential)}, nil
}

// updateInput maps a PATCH of a kind without extra headers.
func updateInput(id string, ifMatch *string, b *api.UpdateProviderRequest) (provider.UpdateInput, error) {
	if b == nil {
		return provider.UpdateInput{}, errNoBody
	}
	return provider.UpdateInput{
		ID: id, IfMatch: ifMatch, Enabled: b.Enabled, Name: b.Name, Config: mapOrNil(b.Config),
		Credential: change(b.Credential),
	}, nil
}

// mapOrNil converts a generated object type (a named map) to a plain map.
func mapOrNil[M ~map[string]any](m *M) map[string]any {
	if m == nil {
		return nil
	}
	if *m == nil {
		return map[string]any{}
	}
	return *m
}

// change maps a nullable PATCH member to the services' tri-state.
func change[T any](n nullable.Nullable[T]) secret.Change[T] {
	switch {
	case !n.IsSpecified():
		return secret.Change[T]{}
	case n.IsNull():
		return secret.Remove[T]()
	}
	return secret.Set(n.MustGet())
}

func toAPIProvider(p provider.Provider) api.Provider {
	names := nullable.NewNullNullable[[]string]()
	if p.Kind == catalog.KindModel {
		names = nullable.NewNullableWithValue(append([]string{}, p.ExtraHeaderNames...))
	}
	return api.Provider{
		Id: p.ID, Kind: api.ProviderKind(p.Kind), Type: p.Type, Name: p.Name, Config: p.Config,
		CredentialConfigured: p.CredentialConfigured, ExtraHeaderNames: names, Enabled: p.Enabled,
		Version: int(p.Version), CreatedById: p.CreatedByID, UpdatedById: p.UpdatedByID,
		CreatedAt: timestamp.Of(p.CreatedAt), UpdatedAt: timestamp.Of(p.UpdatedAt),
	}
}
