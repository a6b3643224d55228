package provider

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/provider/catalog"
)

// ForUse locks the provider providerID of the workspace FOR SHARE, for a
// resource about to be put on it (an environment template, a record memory,
// a model), and returns its installed type. field names the reference in
// errors:
//
//   - absent, or of another workspace: 404 not_found naming field, one message
//     for both;
//   - a provider of another kind: 400 invalid_argument naming field;
//   - disabled: 409 disabled naming field (new use of a disabled provider);
//   - its type is not installed (local, after it was turned off): 409 conflict.
//
// FOR SHARE conflicts with the provider PATCH's FOR NO KEY UPDATE, so a
// concurrent disable is either seen here or waits until tx ends.
func ForUse(ctx context.Context, tx pgx.Tx, reg *catalog.Registry, workspaceID, providerID string, k catalog.Kind, field string) (catalog.Type, error) {
	return Lookup(ctx, tx, reg, workspaceID, providerID, k, field, true)
}

// Lookup is ForUse for a resource that may already be on the provider: when
// newUse is false a disabled provider is accepted (a change to a model that
// keeps its provider, say).
func Lookup(ctx context.Context, tx pgx.Tx, reg *catalog.Registry, workspaceID, providerID string, k catalog.Kind, field string, newUse bool) (catalog.Type, error) {
	row, err := db.New().ProviderForUse(ctx, tx, db.ProviderForUseParams{WorkspaceID: workspaceID, ID: providerID})
	if dbx.IsNotFound(err) {
		return catalog.Type{}, apperr.NotFoundField("provider not found", field, fmt.Sprintf("no %s provider with this id in the workspace", k))
	}
	if err != nil {
		return catalog.Type{}, dbx.Translate(err, "provider")
	}
	if row.Kind != string(k) {
		return catalog.Type{}, apperr.InvalidField(field, fmt.Sprintf("is a %s provider, not a %s provider", row.Kind, k))
	}
	if newUse && !row.Enabled {
		return catalog.Type{}, &apperr.Error{Kind: apperr.KindDisabled, Msg: "the provider is disabled",
			Details: []apperr.Detail{{Field: field, Reason: "the provider is disabled"}}}
	}
	t, ok := reg.Lookup(row.Type)
	if !ok {
		return catalog.Type{}, apperr.New(apperr.KindConflict, fmt.Sprintf("provider type %q is not installed", row.Type))
	}
	return t, nil
}
