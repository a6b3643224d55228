package model

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/audit"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/provider"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/resource"
)

// Service manages the models of the caller's workspace. Each method is one
// transaction.
type Service struct {
	pool *pgxpool.Pool
	q    *db.Queries
	reg  *catalog.Registry
	ring *keyring.Ring
}

// NewService returns a service over pool that validates apis and settings
// against the provider types of reg; runs open their models' providers'
// secrets with ring.
func NewService(pool *pgxpool.Pool, reg *catalog.Registry, ring *keyring.Ring) *Service {
	return &Service{pool: pool, q: db.New(), reg: reg, ring: ring}
}

// Create creates a model in the caller's workspace. The provider is locked FOR
// SHARE while the model is written, so a concurrent disable of the provider is
// either seen (409 disabled) or waits for the model.
func (s *Service) Create(ctx context.Context, c *auth.Caller, in CreateInput) (Model, error) {
	if err := auth.Require(c, auth.PermWrite); err != nil {
		return Model{}, err
	}
	if err := ValidateKey(in.Key); err != nil {
		return Model{}, err
	}
	if err := validateModelName(in.Model); err != nil {
		return Model{}, err
	}
	settings, err := canonical(in.Settings)
	if err != nil {
		return Model{}, err
	}
	if err := validateContextWindow(in.ContextWindow, in.Settings); err != nil {
		return Model{}, err
	}
	enabled := in.Enabled == nil || *in.Enabled
	return dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Model, error) {
		t, err := s.provider(ctx, tx, c, in.ProviderID, true)
		if err != nil {
			return Model{}, err
		}
		if err := validateAPI(t, in.API, in.Settings); err != nil {
			return Model{}, err
		}
		row, err := s.q.ModelInsert(ctx, tx, db.ModelInsertParams{
			WorkspaceID: c.WorkspaceID, Key: in.Key, ProviderID: in.ProviderID, Api: in.API, Model: in.Model,
			Settings: settings, ContextWindow: dbx.Int32(in.ContextWindow), Enabled: enabled, CreatedByID: c.PrincipalID,
		})
		if err != nil {
			return Model{}, dbx.Translate(err, fmt.Sprintf("model %q", in.Key))
		}
		fields := []string{"api", "enabled", "key", "model", "provider_id", "settings"}
		if in.ContextWindow != nil {
			fields = []string{"api", "context_window", "enabled", "key", "model", "provider_id", "settings"}
		}
		if err := s.record(ctx, tx, c, "model.created", row, fields); err != nil {
			return Model{}, err
		}
		return modelOf(row)
	})
}

// List lists the models of the caller's workspace, newest first.
func (s *Service) List(ctx context.Context, c *auth.Caller, limit *int, cursor *string) (Page, error) {
	if err := auth.Require(c, auth.PermRead); err != nil {
		return Page{}, err
	}
	afterAt, afterKey, err := decodeCursor(cursor)
	if err != nil {
		return Page{}, err
	}
	n := resource.Limit(limit)
	rows, err := s.q.ModelList(ctx, s.pool, db.ModelListParams{WorkspaceID: c.WorkspaceID, AfterCreatedAt: afterAt, AfterKey: afterKey, PageLimit: resource.Fetch(n)})
	if err != nil {
		return Page{}, dbx.Translate(err, "model")
	}
	rows, more := resource.Trim(rows, n)
	out := Page{Items: make([]Model, 0, len(rows))}
	for _, r := range rows {
		m, err := modelOf(r)
		if err != nil {
			return Page{}, err
		}
		out.Items = append(out.Items, m)
	}
	if more {
		next := encodeCursor(out.Items[len(out.Items)-1])
		out.NextCursor = &next
	}
	return out, nil
}

// Get reads a model of the caller's workspace; a key of another workspace is
// not found.
func (s *Service) Get(ctx context.Context, c *auth.Caller, key string) (Model, error) {
	if err := auth.Require(c, auth.PermRead); err != nil {
		return Model{}, err
	}
	row, err := s.q.ModelGet(ctx, s.pool, db.ModelGetParams{WorkspaceID: c.WorkspaceID, Key: key})
	if err != nil {
		return Model{}, dbx.Translate(err, "model")
	}
	return modelOf(row)
}

// Update changes a model of the caller's workspace. The If-Match check and the
// write happen on the row locked FOR NO KEY UPDATE in one transaction, so of
// two writers holding the same ETag exactly one wins. A change of provider_id
// or api validates api and settings again against the new type and API. A
// change to nothing keeps the version and records no audit event.
func (s *Service) Update(ctx context.Context, c *auth.Caller, in UpdateInput) (Model, error) {
	if err := auth.Require(c, auth.PermWrite); err != nil {
		return Model{}, err
	}
	if in.Model != nil {
		if err := validateModelName(*in.Model); err != nil {
			return Model{}, err
		}
	}
	var newSettings []byte
	if in.Settings != nil {
		var err error
		if newSettings, err = canonical(in.Settings); err != nil {
			return Model{}, err
		}
	}
	return dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Model, error) {
		row, err := s.q.ModelGetForUpdate(ctx, tx, db.ModelGetForUpdateParams{WorkspaceID: c.WorkspaceID, Key: in.Key})
		if err != nil {
			return Model{}, dbx.Translate(err, "model")
		}
		if err := resource.CheckIfMatch(in.IfMatch, row.Key, row.Version); err != nil {
			return Model{}, err
		}
		p := db.ModelUpdateParams{
			WorkspaceID: row.WorkspaceID, Key: row.Key, ProviderID: row.ProviderID, Api: row.Api, Model: row.Model,
			Settings: row.Settings, ContextWindow: row.ContextWindow, Enabled: row.Enabled, UpdatedByID: c.PrincipalID,
		}
		var fields []string
		if in.ProviderID != nil && *in.ProviderID != row.ProviderID {
			p.ProviderID, fields = *in.ProviderID, append(fields, "provider_id")
		}
		if in.API != nil && *in.API != row.Api {
			p.Api, fields = *in.API, append(fields, "api")
		}
		if in.Model != nil && *in.Model != row.Model {
			p.Model, fields = *in.Model, append(fields, "model")
		}
		if newSettings != nil && !sameJSON(row.Settings, newSettings) {
			p.Settings, fields = newSettings, append(fields, "settings")
		}
		if in.SetContextWindow && !sameInt(dbx.Int(row.ContextWindow), in.ContextWindow) {
			p.ContextWindow, fields = dbx.Int32(in.ContextWindow), append(fields, "context_window")
		}
		if in.Enabled != nil && *in.Enabled != row.Enabled {
			p.Enabled, fields = *in.Enabled, append(fields, "enabled")
		}
		if len(fields) == 0 {
			return modelOf(row)
		}
		if err := s.revalidate(ctx, tx, c, row, p, fields); err != nil {
			return Model{}, err
		}
		row, err = s.q.ModelUpdate(ctx, tx, p)
		if err != nil {
			return Model{}, err
		}
		slices.Sort(fields)
		if err := s.record(ctx, tx, c, "model.updated", row, fields); err != nil {
			return Model{}, err
		}
		return modelOf(row)
	})
}

// revalidate checks the new provider, api and settings of a changing update.
// A new provider is new use: it must be an enabled model provider of the
// workspace. The api and the settings are validated whenever the provider, the
// api or the settings change, always as the whole resulting model.
func (s *Service) revalidate(ctx context.Context, tx pgx.Tx, c *auth.Caller, row db.Model, p db.ModelUpdateParams, fields []string) error {
	if !slices.ContainsFunc(fields, func(f string) bool {
		return f == "provider_id" || f == "api" || f == "settings" || f == "context_window"
	}) {
		return nil
	}
	settings, err := decodeSettings(p.Settings)
	if err != nil {
		return fmt.Errorf("model %s: settings: %w", row.Key, err)
	}
	if err := validateContextWindow(dbx.Int(p.ContextWindow), settings); err != nil {
		return err
	}
	if !slices.ContainsFunc(fields, func(f string) bool { return f == "provider_id" || f == "api" || f == "settings" }) {
		return nil
	}
	t, err := s.provider(ctx, tx, c, p.ProviderID, p.ProviderID != row.ProviderID)
	if err != nil {
		return err
	}
	return validateAPI(t, p.Api, settings)
}

// provider locks the model provider providerID of the caller's workspace FOR
// SHARE and returns its type (provider.Lookup, naming provider_id); a disabled
// one is 409 disabled when newUse.
func (s *Service) provider(ctx context.Context, tx pgx.Tx, c *auth.Caller, providerID string, newUse bool) (catalog.Type, error) {
	return provider.Lookup(ctx, tx, s.reg, c.WorkspaceID, providerID, catalog.KindModel, "provider_id", newUse)
}

// validateAPI checks that the type speaks api and that settings fit its schema.
func validateAPI(t catalog.Type, api string, settings map[string]any) error {
	a, ok := t.API(api)
	if !ok {
		ids := make([]string, 0, len(t.APIs))
		for _, x := range t.APIs {
			ids = append(ids, x.ID)
		}
		return apperr.InvalidField("api", fmt.Sprintf("the %s provider type speaks %v", t.ID, ids))
	}
	if settings == nil {
		settings = map[string]any{}
	}
	return a.ValidateSettings(settings)
}

// sameInt reports whether two optional integers are equal.
func sameInt(a, b *int) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

// sameJSON reports whether two stored JSON objects are equal as values.
func sameJSON(stored, next []byte) bool {
	old, err := decodeSettings(stored)
	if err != nil {
		return false
	}
	a, err := canonical(old)
	return err == nil && bytes.Equal(a, next)
}

// record writes the audit event of a change to row.
func (s *Service) record(ctx context.Context, tx pgx.Tx, c *auth.Caller, action string, row db.Model, fields []string) error {
	return audit.Record(ctx, tx, audit.Event{
		OrganizationID: c.OrganizationID, WorkspaceID: row.WorkspaceID, ActorID: c.PrincipalID,
		Action: action, SubjectType: "model", SubjectID: row.Key, Version: &row.Version, ChangedFields: fields,
	})
}
