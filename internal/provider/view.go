// Package provider manages providers: the configured accounts of external
// services, one collection per kind (model, web, environment, connector,
// memory). It validates each provider against its installed type, checks every
// endpoint in its config against the deployment's endpoint policy, seals
// credentials and extra headers with the key ring bound to the provider's id,
// and never hands a secret back except through OpenSecrets, for the code that
// calls the vendor.
package provider

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/resource"
)

// Provider is the view of a provider. It carries no secret: only whether a
// credential is stored and the names of the extra headers.
type Provider struct {
	ID                   string
	WorkspaceID          string
	Kind                 catalog.Kind
	Type                 string
	Name                 string
	Config               map[string]any
	CredentialConfigured bool
	// ExtraHeaderNames are sorted; nil for kinds other than model.
	ExtraHeaderNames []string
	Enabled          bool
	Version          int32
	CreatedByID      string
	UpdatedByID      string
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// ETag is the provider's entity tag.
func (p Provider) ETag() string { return resource.ETag(p.ID, p.Version) }

// providerOf maps a row to the view.
func providerOf(r db.Provider) (Provider, error) {
	cfg, err := decodeConfig(r.Config)
	if err != nil {
		return Provider{}, fmt.Errorf("provider %s: stored config: %w", r.ID, err)
	}
	p := Provider{
		ID: r.ID, WorkspaceID: r.WorkspaceID, Kind: catalog.Kind(r.Kind), Type: r.Type, Name: r.Name,
		Config: cfg, CredentialConfigured: r.Credential != nil, Enabled: r.Enabled, Version: r.Version,
		CreatedByID: r.CreatedByID, UpdatedByID: r.UpdatedByID, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}
	if p.Kind == catalog.KindModel {
		p.ExtraHeaderNames = slices.Sorted(slices.Values(r.ExtraHeaderNames))
	}
	return p, nil
}

// decodeConfig decodes a stored config; the column is never null.
func decodeConfig(raw []byte) (map[string]any, error) {
	cfg := map[string]any{}
	if len(raw) == 0 {
		return cfg, nil
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Page is one page of a list, newest first; NextCursor is nil on the last page.
type Page = resource.Page[Provider]
