package template

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
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/labels"
	"github.com/svcdev/svc/internal/provider"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/resource"
)

// Service manages the environment templates of the caller's workspace. Each
// method is one transaction.
type Service struct {
	pool *pgxpool.Pool
	q    *db.Queries
	reg  *catalog.Registry
	// checks are the operator's rules on a type's template config, by type id.
	checks map[string]provider.ConfigCheck
}

// SetConfigCheck adds check to the validation of the configs of templates on
// providers of type typeID (when a template is created or its config
// changes): an operator's rule beyond the type's environment schema, such as
// the docker type's users. Call it before the service is used.
func (s *Service) SetConfigCheck(typeID string, check provider.ConfigCheck) {
	if s.checks == nil {
		s.checks = map[string]provider.ConfigCheck{}
	}
	s.checks[typeID] = check
}

// NewService returns a service over pool that validates configs against the
// environment schemas of the provider types of reg.
func NewService(pool *pgxpool.Pool, reg *catalog.Registry) *Service {
	return &Service{pool: pool, q: db.New(), reg: reg}
}

// Create creates a template in the caller's workspace. The environment
// provider is locked FOR SHARE while the template is written, so a concurrent
// disable of the provider is either seen (409 disabled) or waits.
func (s *Service) Create(ctx context.Context, c *auth.Caller, in CreateInput) (Template, error) {
	if err := auth.Require(c, auth.PermWrite); err != nil {
		return Template{}, err
	}
	if err := resource.ValidateName("name", in.Name); err != nil {
		return Template{}, err
	}
	if err := resource.ValidateDescription(fieldDescription, in.Description); err != nil {
		return Template{}, err
	}
	if err := labels.Validate(in.Labels); err != nil {
		return Template{}, err
	}
	if err := validateThresholds(in.IdleStopSeconds, in.IdleDeleteSeconds); err != nil {
		return Template{}, err
	}
	cfg, err := canonical(in.Config)
	if err != nil {
		return Template{}, err
	}
	enabled := in.Enabled == nil || *in.Enabled
	return dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Template, error) {
		t, err := provider.ForUse(ctx, tx, s.reg, c.WorkspaceID, in.ProviderID, catalog.KindEnvironment, fieldProvider)
		if err != nil {
			return Template{}, err
		}
		if err := s.validateForType(t, in.Config, in.IdleStopSeconds, in.IdleDeleteSeconds); err != nil {
			return Template{}, err
		}
		row, err := s.q.EnvironmentTemplateInsert(ctx, tx, db.EnvironmentTemplateInsertParams{
			ID: id.New(id.EnvironmentTemplate), WorkspaceID: c.WorkspaceID, ProviderID: in.ProviderID,
			Name: in.Name, Description: in.Description, Config: cfg,
			IdleStopSeconds: dbx.Int32(in.IdleStopSeconds), IdleDeleteSeconds: dbx.Int32(in.IdleDeleteSeconds),
			Labels: labels.Encode(in.Labels), Enabled: enabled, CreatedByID: c.PrincipalID,
		})
		if err != nil {
			return Template{}, err
		}
		fields := []string{"config", "description", "enabled", fieldProvider, "labels", "name"}
		if in.IdleDeleteSeconds != nil {
			fields = append(fields, fieldIdleDelete)
		}
		if in.IdleStopSeconds != nil {
			fields = append(fields, fieldIdleStop)
		}
		slices.Sort(fields)
		if err := s.record(ctx, tx, c, "environment_template.created", row, fields); err != nil {
			return Template{}, err
		}
		return templateOf(row)
	})
}

// List lists the templates of the caller's workspace, newest first, filtered
// by label selectors, q and archived (see ListInput).
func (s *Service) List(ctx context.Context, c *auth.Caller, in ListInput) (Page, error) {
	if err := auth.Require(c, auth.PermRead); err != nil {
		return Page{}, err
	}
	after, err := resource.AfterID(in.Cursor)
	if err != nil {
		return Page{}, err
	}
	sels, err := labels.ParseSelectors(in.Labels)
	if err != nil {
		return Page{}, err
	}
	pattern, err := resource.SearchPattern(in.Q)
	if err != nil {
		return Page{}, err
	}
	var enabled *bool
	if in.Archived != nil {
		e := !*in.Archived
		enabled = &e
	}
	filter, possible := labels.Filter(c.WorkspaceID, sels)
	if !possible {
		return Page{Items: []Template{}}, nil
	}
	n := resource.Limit(in.Limit)
	var rows []db.EnvironmentTemplate
	if filter == nil {
		rows, err = s.q.EnvironmentTemplateList(ctx, s.pool, db.EnvironmentTemplateListParams{
			WorkspaceID: c.WorkspaceID, AfterID: after, Enabled: enabled, Pattern: pattern, PageLimit: resource.Fetch(n),
		})
	} else {
		rows, err = s.q.EnvironmentTemplateListByLabels(ctx, s.pool, db.EnvironmentTemplateListByLabelsParams{
			WorkspaceID: c.WorkspaceID, AfterID: after, Selectors: filter, Enabled: enabled, Pattern: pattern, PageLimit: resource.Fetch(n),
		})
	}
	if err != nil {
		return Page{}, dbx.Translate(err, "environment template")
	}
	return resource.PageOfErr(rows, n, templateOf, func(r db.EnvironmentTemplate) string { return r.ID })
}

// Get reads a template of the caller's workspace; an id of another workspace
// is not found.
func (s *Service) Get(ctx context.Context, c *auth.Caller, templateID string) (Template, error) {
	if err := auth.Require(c, auth.PermRead); err != nil {
		return Template{}, err
	}
	row, err := s.q.EnvironmentTemplateGet(ctx, s.pool, db.EnvironmentTemplateGetParams{WorkspaceID: c.WorkspaceID, ID: templateID})
	if err != nil {
		return Template{}, dbx.Translate(err, "environment template")
	}
	return templateOf(row)
}

// Update changes a template of the caller's workspace. The If-Match check and
// the write happen on the row locked FOR NO KEY UPDATE in one transaction, so
// of two writers holding the same ETag exactly one wins. A change of config or
// of a threshold validates the resulting template against its provider type;
// the provider itself may be disabled meanwhile (editing is not new use). A
// change to nothing keeps the version and records no audit event.
func (s *Service) Update(ctx context.Context, c *auth.Caller, in UpdateInput) (Template, error) {
	if err := auth.Require(c, auth.PermWrite); err != nil {
		return Template{}, err
	}
	if in.Name != nil {
		if err := resource.ValidateName("name", *in.Name); err != nil {
			return Template{}, err
		}
	}
	if in.Description != nil {
		if err := resource.ValidateDescription(fieldDescription, *in.Description); err != nil {
			return Template{}, err
		}
	}
	if in.Labels != nil {
		if err := labels.Validate(in.Labels); err != nil {
			return Template{}, err
		}
	}
	if err := validateThreshold(fieldIdleStop, in.IdleStopSeconds.Value); err != nil {
		return Template{}, err
	}
	if err := validateThreshold(fieldIdleDelete, in.IdleDeleteSeconds.Value); err != nil {
		return Template{}, err
	}
	var newCfg []byte
	if in.Config != nil {
		var err error
		if newCfg, err = canonical(in.Config); err != nil {
			return Template{}, err
		}
	}
	return dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Template, error) {
		row, err := s.q.EnvironmentTemplateGetForUpdate(ctx, tx, db.EnvironmentTemplateGetForUpdateParams{WorkspaceID: c.WorkspaceID, ID: in.ID})
		if err != nil {
			return Template{}, dbx.Translate(err, "environment template")
		}
		if err := resource.CheckIfMatch(in.IfMatch, row.ID, row.Version); err != nil {
			return Template{}, err
		}
		p, fields, err := changes(row, in, newCfg)
		if err != nil {
			return Template{}, err
		}
		if len(fields) == 0 {
			return templateOf(row)
		}
		if slices.ContainsFunc(fields, func(f string) bool { return f == "config" || f == fieldIdleStop || f == fieldIdleDelete }) {
			if err := s.revalidate(ctx, tx, row, p); err != nil {
				return Template{}, err
			}
		}
		p.UpdatedByID = c.PrincipalID
		row, err = s.q.EnvironmentTemplateUpdate(ctx, tx, p)
		if err != nil {
			return Template{}, err
		}
		slices.Sort(fields)
		if err := s.record(ctx, tx, c, "environment_template.updated", row, fields); err != nil {
			return Template{}, err
		}
		return templateOf(row)
	})
}

// changes compares a PATCH with the stored row and returns the row as it will
// be and the names of the members that change.
func changes(row db.EnvironmentTemplate, in UpdateInput, newCfg []byte) (db.EnvironmentTemplateUpdateParams, []string, error) {
	p := db.EnvironmentTemplateUpdateParams{
		ID: row.ID, Name: row.Name, Description: row.Description, Config: row.Config,
		IdleStopSeconds: row.IdleStopSeconds, IdleDeleteSeconds: row.IdleDeleteSeconds,
		Labels: row.Labels, Enabled: row.Enabled,
	}
	var fields []string
	if in.Name != nil && *in.Name != row.Name {
		p.Name, fields = *in.Name, append(fields, "name")
	}
	if in.Description != nil && *in.Description != row.Description {
		p.Description, fields = *in.Description, append(fields, fieldDescription)
	}
	if newCfg != nil {
		same, err := sameJSON(row.Config, newCfg)
		if err != nil {
			return p, nil, fmt.Errorf("environment template %s: stored config: %w", row.ID, err)
		}
		if !same {
			p.Config, fields = newCfg, append(fields, "config")
		}
	}
	if in.IdleStopSeconds.Present && !equalInt(row.IdleStopSeconds, in.IdleStopSeconds.Value) {
		p.IdleStopSeconds, fields = dbx.Int32(in.IdleStopSeconds.Value), append(fields, fieldIdleStop)
	}
	if in.IdleDeleteSeconds.Present && !equalInt(row.IdleDeleteSeconds, in.IdleDeleteSeconds.Value) {
		p.IdleDeleteSeconds, fields = dbx.Int32(in.IdleDeleteSeconds.Value), append(fields, fieldIdleDelete)
	}
	if in.Labels != nil {
		stored, err := labels.Decode(row.Labels)
		if err != nil {
			return p, nil, fmt.Errorf("environment template %s: stored labels: %w", row.ID, err)
		}
		if !labels.Equal(stored, in.Labels) {
			p.Labels, fields = labels.Encode(in.Labels), append(fields, "labels")
		}
	}
	if in.Enabled != nil && *in.Enabled != row.Enabled {
		p.Enabled, fields = *in.Enabled, append(fields, "enabled")
	}
	return p, fields, nil
}

// revalidate checks the config and thresholds a PATCH leaves against the
// template's provider type. The provider never changes and may be disabled:
// its type is read without a lock.
func (s *Service) revalidate(ctx context.Context, tx pgx.Tx, row db.EnvironmentTemplate, p db.EnvironmentTemplateUpdateParams) error {
	if err := validateThresholds(dbx.Int(p.IdleStopSeconds), dbx.Int(p.IdleDeleteSeconds)); err != nil {
		return err
	}
	prv, err := s.q.ProviderTypeOf(ctx, tx, db.ProviderTypeOfParams{WorkspaceID: row.WorkspaceID, ID: row.ProviderID})
	if err != nil {
		return dbx.Translate(err, "environment provider")
	}
	t, ok := s.reg.Lookup(prv.Type)
	if !ok {
		// The type was uninstalled (local, after environments.local_enabled was
		// turned off): its schema is gone, so config and thresholds are frozen.
		return apperr.New(apperr.KindConflict, fmt.Sprintf("provider type %q is not installed", prv.Type))
	}
	cfg := map[string]any{}
	if err := jsonUnmarshal(p.Config, &cfg); err != nil {
		return fmt.Errorf("environment template %s: config: %w", row.ID, err)
	}
	return s.validateForType(t, cfg, dbx.Int(p.IdleStopSeconds), dbx.Int(p.IdleDeleteSeconds))
}

// validateForType checks a template's config against the type's environment
// schema and the operator's ConfigCheck of the type (errors name
// config.<member>), and that the type can do what the thresholds ask: stopping needs a type that svc manages and can stop,
// deleting one that svc manages and can destroy.
func (s *Service) validateForType(t catalog.Type, cfg map[string]any, stop, del *int) error {
	if cfg == nil {
		cfg = map[string]any{}
	}
	if err := t.ValidateEnvironment(cfg); err != nil {
		return err
	}
	if check := s.checks[t.ID]; check != nil {
		if err := check(cfg); err != nil {
			return err
		}
	}
	env := t.Environment
	if stop != nil && !(env.ManagedInstances && env.Stop) {
		return apperr.InvalidField(fieldIdleStop, fmt.Sprintf("the %s provider type cannot stop environments; leave it null", t.ID))
	}
	if del != nil && !(env.ManagedInstances && env.Destroy) {
		return apperr.InvalidField(fieldIdleDelete, fmt.Sprintf("the %s provider type cannot delete environments; leave it null", t.ID))
	}
	return nil
}

// record writes the audit event of a change to row.
func (s *Service) record(ctx context.Context, tx pgx.Tx, c *auth.Caller, action string, row db.EnvironmentTemplate, fields []string) error {
	return audit.Record(ctx, tx, audit.Event{
		OrganizationID: c.OrganizationID, WorkspaceID: row.WorkspaceID, ActorID: c.PrincipalID,
		Action: action, SubjectType: "environment_template", SubjectID: row.ID, Version: &row.Version, ChangedFields: fields,
	})
}

// sameJSON reports whether a stored JSON object equals a canonical new one as
// a value (key order and number spelling do not count).
func sameJSON(stored, next []byte) (bool, error) {
	old := map[string]any{}
	if err := jsonUnmarshal(stored, &old); err != nil {
		return false, err
	}
	a, err := canonical(old)
	if err != nil {
		return false, err
	}
	return bytes.Equal(a, next), nil
}

// equalInt compares a stored threshold with a PATCH's value.
func equalInt(stored *int32, v *int) bool {
	if stored == nil || v == nil {
		return stored == nil && v == nil
	}
	return int(*stored) == *v
}
