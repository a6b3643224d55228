package provider

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/secret"
)

// Opened is a provider as a run's tools call it: its type, its stored config
// and its opened secrets. Never put it in a view, a log or an error.
type Opened struct {
	ID      string
	Type    string
	Enabled bool
	// Config is the stored config (the type's defaults not applied).
	Config  json.RawMessage
	Secrets Secrets
}

// CredentialJSON is the opened credential as JSON, nil when none is stored.
func (o Opened) CredentialJSON() (json.RawMessage, error) {
	if o.Secrets.Credential == nil {
		return nil, nil
	}
	return json.Marshal(o.Secrets.Credential)
}

// OpenForRun reads provider providerID of kind k in the workspace as it is
// now and opens its secrets, for a run that calls it (its web toolset, say).
// An absent provider is apperr not_found. Whether a disabled provider may
// still be used is the caller's rule; Opened.Enabled says.
func (s *Service) OpenForRun(ctx context.Context, workspaceID string, k catalog.Kind, providerID string) (Opened, error) {
	row, err := s.q.ProviderGet(ctx, s.pool, db.ProviderGetParams{WorkspaceID: workspaceID, Kind: string(k), ID: providerID})
	if err != nil {
		return Opened{}, dbx.Translate(err, "provider")
	}
	sec, err := OpenSealed(s.ring, row.ID, row.Credential, row.ExtraHeaders)
	if err != nil {
		return Opened{}, err
	}
	return Opened{ID: row.ID, Type: row.Type, Enabled: row.Enabled, Config: row.Config, Secrets: sec}, nil
}

// Enabled reports whether provider providerID of the workspace is enabled
// now: a run's tools check it at every call, so that disabling a provider
// stops its use at once.
func (s *Service) Enabled(ctx context.Context, workspaceID, providerID string) (bool, error) {
	enabled, err := s.q.ProviderEnabled(ctx, s.pool, db.ProviderEnabledParams{WorkspaceID: workspaceID, ID: providerID})
	if err != nil {
		return false, fmt.Errorf("check provider %s: %w", providerID, err)
	}
	return enabled, nil
}

// OpenSealed opens a provider's stored credential and extra headers, sealed
// bound to providerID; nil sealed values stay nil. A secret that cannot be
// opened fails with an error wrapping ErrSecretUnreadable.
func OpenSealed(ring *keyring.Ring, providerID string, credential, extraHeaders []byte) (Secrets, error) {
	var out Secrets
	if err := secret.Open(ring, providerID, credential, &out.Credential); err != nil {
		return Secrets{}, fmt.Errorf("open the credential of provider %s: %w", providerID, err)
	}
	if err := secret.Open(ring, providerID, extraHeaders, &out.ExtraHeaders); err != nil {
		return Secrets{}, fmt.Errorf("open the extra headers of provider %s: %w", providerID, err)
	}
	return out, nil
}
