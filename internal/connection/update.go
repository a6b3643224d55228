package connection

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/provider"
	"github.com/svcdev/svc/internal/resource"
	"github.com/svcdev/svc/internal/secret"
)

// Update changes a connection of the caller's workspace, with the provider
// PATCH's rules: the credential is tri-state (a value replaces, null removes,
// absent keeps), and a config change while a credential is stored must replace
// or remove it too. The If-Match check and the write happen on the row locked
// FOR NO KEY UPDATE in one transaction, so of two writers holding the same
// ETag exactly one wins. A change to nothing keeps the version and records no
// audit event; a resent credential counts as unchanged when it equals the
// stored one.
func (s *Service) Update(ctx context.Context, c *auth.Caller, in UpdateInput) (Connection, error) {
	if err := auth.Require(c, auth.PermWrite); err != nil {
		return Connection{}, err
	}
	if in.Name != nil {
		if err := provider.ValidateName(*in.Name); err != nil {
			return Connection{}, err
		}
	}
	var newCfg []byte
	if in.Config != nil {
		var err error
		if newCfg, err = canonical(in.Config); err != nil {
			return Connection{}, err
		}
	}
	return dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Connection, error) {
		row, err := s.q.ConnectionGetForUpdate(ctx, tx, db.ConnectionGetForUpdateParams{WorkspaceID: c.WorkspaceID, ID: in.ID})
		if err != nil {
			return Connection{}, dbx.Translate(err, "connection")
		}
		if err := resource.CheckIfMatch(in.IfMatch, row.ID, row.Version); err != nil {
			return Connection{}, err
		}
		if err := s.validateUpdate(ctx, tx, c, row, in); err != nil {
			return Connection{}, err
		}
		p := db.ConnectionUpdateParams{
			ID: row.ID, Name: row.Name, Config: row.Config, Credential: row.Credential, Account: row.Account,
			Enabled: row.Enabled, UpdatedByID: c.PrincipalID,
		}
		var fields []string
		if in.Enabled != nil && *in.Enabled != row.Enabled {
			p.Enabled, fields = *in.Enabled, append(fields, "enabled")
		}
		if in.Name != nil && *in.Name != row.Name {
			p.Name, fields = *in.Name, append(fields, "name")
		}
		changed, err := configDiffers(row.Config, in.Config)
		if err != nil {
			return Connection{}, fmt.Errorf("connection %s: stored config: %w", row.ID, err)
		}
		if changed {
			if row.Credential != nil && !in.Credential.Present {
				return Connection{}, apperr.InvalidArgument("a config change must replace or remove the stored credential",
					apperr.Detail{Field: "credential", Reason: "must be resent (or set to null) when config changes while a credential is stored"})
			}
			// An authorization in flight was begun with the old config (a
			// Composio auth config, say); it must not complete with it.
			if err := s.failPending(ctx, tx, c.OrganizationID, c.PrincipalID, row.ID, "the connection's config changed before the authorization completed"); err != nil {
				return Connection{}, err
			}
			p.Config, fields = newCfg, append(fields, "config")
		}
		if in.Credential.Present && secret.Differs(s.ring, row.ID, row.Credential, in.Credential.Value) {
			if p.Credential, err = secret.Seal(s.ring, row.ID, secret.Deref(in.Credential.Value)); err != nil {
				return Connection{}, err
			}
			fields = append(fields, "credential")
		}
		if len(fields) == 0 {
			return connectionOf(row)
		}
		row, err = s.q.ConnectionUpdate(ctx, tx, p)
		if err != nil {
			return Connection{}, err
		}
		if err := s.record(ctx, tx, c.OrganizationID, c.PrincipalID, "connection.updated", row, sorted(fields)); err != nil {
			return Connection{}, err
		}
		return connectionOf(row)
	})
}

// validateUpdate checks a given config and credential against the connector
// type of the connection's provider. The provider is read FOR SHARE but need
// not be enabled: editing a connection is not a new use of its provider.
func (s *Service) validateUpdate(ctx context.Context, tx pgx.Tx, c *auth.Caller, row db.Connection, in UpdateInput) error {
	if in.Config == nil && in.Credential.Value == nil {
		return nil
	}
	p, err := s.provider(ctx, tx, c.WorkspaceID, row.ProviderID, "provider_id", false)
	if err != nil {
		return err
	}
	if in.Config != nil {
		if err := p.typ.ValidateConnectionConfig(in.Config); err != nil {
			return err
		}
	}
	if in.Credential.Value != nil {
		return p.typ.ValidateConnectionCredential(*in.Credential.Value)
	}
	return nil
}

// Revoke removes the credential of a connection of the caller's workspace,
// so it no longer acts as the account, and fails its pending
// authorization, so that an authorization completing later cannot bring a
// credential back. It needs If-Match like a PATCH. A connection without a
// credential keeps its version and records no connection event.
func (s *Service) Revoke(ctx context.Context, c *auth.Caller, connectionID string, ifMatch *string) (Connection, error) {
	if err := auth.Require(c, auth.PermWrite); err != nil {
		return Connection{}, err
	}
	return dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Connection, error) {
		row, err := s.q.ConnectionGetForUpdate(ctx, tx, db.ConnectionGetForUpdateParams{WorkspaceID: c.WorkspaceID, ID: connectionID})
		if err != nil {
			return Connection{}, dbx.Translate(err, "connection")
		}
		if err := resource.CheckIfMatch(ifMatch, row.ID, row.Version); err != nil {
			return Connection{}, err
		}
		if err := s.failPending(ctx, tx, c.OrganizationID, c.PrincipalID, row.ID, "the connection was revoked before the authorization completed"); err != nil {
			return Connection{}, err
		}
		if row.Credential == nil {
			return connectionOf(row)
		}
		row, err = s.q.ConnectionUpdate(ctx, tx, db.ConnectionUpdateParams{
			ID: row.ID, Name: row.Name, Config: row.Config, Credential: nil, Account: row.Account,
			Enabled: row.Enabled, UpdatedByID: c.PrincipalID,
		})
		if err != nil {
			return Connection{}, err
		}
		if err := s.record(ctx, tx, c.OrganizationID, c.PrincipalID, "connection.revoked", row, []string{"credential"}); err != nil {
			return Connection{}, err
		}
		return connectionOf(row)
	})
}

// sorted sorts field names in place and returns them.
func sorted(fields []string) []string {
	slices.Sort(fields)
	return fields
}
