package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/resource"
	"github.com/svcdev/svc/internal/secret"
)

// Update changes a provider of kind k in the caller's workspace
// (docs/decisions/0013-providers.md). The If-Match check and the write happen on the row locked
// FOR NO KEY UPDATE in one transaction, so of two writers holding the same ETag
// exactly one wins. A change to nothing keeps the version and records no audit
// event; a resent secret counts as unchanged when it equals the stored one.
func (s *Service) Update(ctx context.Context, c *auth.Caller, k catalog.Kind, in UpdateInput) (Provider, error) {
	if err := auth.Require(c, auth.PermWrite); err != nil {
		return Provider{}, err
	}
	// Validate before locking: the endpoint check may resolve host names. The
	// type of a provider never changes, so an unlocked read finds it.
	row, err := s.q.ProviderGet(ctx, s.pool, db.ProviderGetParams{WorkspaceID: c.WorkspaceID, Kind: string(k), ID: in.ID})
	if err != nil {
		return Provider{}, dbx.Translate(err, "provider")
	}
	if err := s.validateUpdate(ctx, k, row, in); err != nil {
		return Provider{}, err
	}
	var newCfg []byte
	if in.Config != nil {
		if newCfg, err = canonical(in.Config); err != nil {
			return Provider{}, err
		}
	}
	return dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Provider, error) {
		row, err := s.q.ProviderGetForUpdate(ctx, tx, db.ProviderGetForUpdateParams{WorkspaceID: c.WorkspaceID, Kind: string(k), ID: in.ID})
		if err != nil {
			return Provider{}, dbx.Translate(err, "provider")
		}
		if err := resource.CheckIfMatch(in.IfMatch, row.ID, row.Version); err != nil {
			return Provider{}, err
		}
		p := db.ProviderUpdateParams{
			ID: row.ID, Name: row.Name, Config: row.Config, Credential: row.Credential, ExtraHeaders: row.ExtraHeaders,
			ExtraHeaderNames: row.ExtraHeaderNames, Enabled: row.Enabled, UpdatedByID: c.PrincipalID,
		}
		var fields []string
		if in.Enabled != nil && *in.Enabled != row.Enabled {
			p.Enabled, fields = *in.Enabled, append(fields, "enabled")
		}
		if in.Name != nil && *in.Name != row.Name {
			p.Name, fields = *in.Name, append(fields, "name")
		}
		configChanged, err := configDiffers(row.Config, in.Config)
		if err != nil {
			return Provider{}, fmt.Errorf("provider %s: stored config: %w", row.ID, err)
		}
		if configChanged {
			if err := resendRequired(row, in); err != nil {
				return Provider{}, err
			}
			p.Config, fields = newCfg, append(fields, "config")
		}
		if in.Credential.Present && secret.Differs(s.ring, row.ID, row.Credential, in.Credential.Value) {
			if p.Credential, err = s.seal(row.ID, secret.Deref(in.Credential.Value)); err != nil {
				return Provider{}, err
			}
			fields = append(fields, "credential")
		}
		if in.ExtraHeaders.Present && secret.Differs(s.ring, row.ID, row.ExtraHeaders, in.ExtraHeaders.Value) {
			h := secret.Deref(in.ExtraHeaders.Value)
			if p.ExtraHeaders, err = s.seal(row.ID, h); err != nil {
				return Provider{}, err
			}
			p.ExtraHeaderNames, fields = headerNames(h), append(fields, "extra_headers")
		}
		if len(fields) == 0 {
			return providerOf(row)
		}
		row, err = s.q.ProviderUpdate(ctx, tx, p)
		if err != nil {
			return Provider{}, err
		}
		slices.Sort(fields)
		if err := s.record(ctx, tx, c, "provider.updated", row, fields); err != nil {
			return Provider{}, err
		}
		return providerOf(row)
	})
}

// validateUpdate checks the members given against the provider's type.
func (s *Service) validateUpdate(ctx context.Context, k catalog.Kind, row db.Provider, in UpdateInput) error {
	if in.Name != nil {
		if err := ValidateName(*in.Name); err != nil {
			return err
		}
	}
	if in.ExtraHeaders.Present && k != catalog.KindModel {
		return apperr.InvalidField("extra_headers", "only model providers take extra headers")
	}
	if in.ExtraHeaders.Value != nil {
		if err := validateExtraHeaders(*in.ExtraHeaders.Value); err != nil {
			return err
		}
	}
	if in.Config == nil && !in.Credential.Present {
		return nil
	}
	t, ok := s.reg.Lookup(row.Type)
	if !ok {
		// The type was uninstalled (local, after environments.local_enabled was
		// turned off): its schemas are gone, so config and credential are frozen.
		return apperr.New(apperr.KindConflict, fmt.Sprintf("provider type %q is not installed", row.Type))
	}
	switch {
	case in.Credential.Value != nil:
		if err := t.ValidateCredential(*in.Credential.Value); err != nil {
			return err
		}
	case in.Credential.Present && t.CredentialRequired:
		return apperr.InvalidField("credential", fmt.Sprintf("is required by the %s type and cannot be removed", t.ID))
	}
	// The provider as it will be: the given config and credential, else the
	// stored ones.
	cred := secret.Deref(in.Credential.Value)
	if !in.Credential.Present {
		if err := s.open(row.ID, row.Credential, &cred); err != nil {
			return err
		}
	}
	cfg := in.Config
	if cfg == nil {
		stored, err := decodeConfig(row.Config)
		if err != nil {
			return fmt.Errorf("provider %s: stored config: %w", row.ID, err)
		}
		if err := s.checkEngine(ctx, t, stored, cred); err != nil {
			return err
		}
		return nil
	}
	return s.validateConfig(ctx, t, cfg, cred)
}

// resendRequired enforces that a config change (a new base URL,
// say) must not silently carry the stored secrets to it, so every stored
// secret must be replaced or removed in the same PATCH.
func resendRequired(row db.Provider, in UpdateInput) error {
	var details []apperr.Detail
	if row.Credential != nil && !in.Credential.Present {
		details = append(details, apperr.Detail{Field: "credential", Reason: "must be resent (or set to null) when config changes while a credential is stored"})
	}
	if row.ExtraHeaders != nil && !in.ExtraHeaders.Present {
		details = append(details, apperr.Detail{Field: "extra_headers", Reason: "must be resent (or set to null) when config changes while extra headers are stored"})
	}
	if len(details) > 0 {
		return apperr.InvalidArgument("a config change must replace or remove the stored secrets", details...)
	}
	return nil
}

// configDiffers reports whether a PATCH's config differs from the stored one
// (as JSON values: key order and number spelling do not count).
func configDiffers(stored []byte, cfg map[string]any) (bool, error) {
	if cfg == nil {
		return false, nil
	}
	old, err := decodeConfig(stored)
	if err != nil {
		return false, err
	}
	a, _ := json.Marshal(old)
	b, err := json.Marshal(cfg)
	if err != nil {
		return true, nil
	}
	return !bytes.Equal(a, b), nil
}
