// Package template manages environment templates: how a workspace makes
// environments on one of its environment providers
// (docs/decisions/0018-templates-memories-subscriptions.md).
// A template's config is validated by its provider type's environment schema;
// its idle thresholds tell the maintain_environments sweep when to stop and
// when to delete an idle environment; its labels (internal/labels) and name
// and description are what lists filter on. Templates are live rows: they
// change in place, are disabled rather than deleted, and a disabled template
// refuses new use at once.
package template

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/labels"
	"github.com/svcdev/svc/internal/provider"
	"github.com/svcdev/svc/internal/resource"
)

// Bounds of the idle thresholds, in seconds. Below a minute is shorter than a
// sweep's interval is meant to resolve; a year is "never" for practical use.
const (
	MinIdleSeconds = 60
	MaxIdleSeconds = 31536000
)

// Field names of the contract, used in errors.
const (
	fieldProvider    = "environment_provider_id"
	fieldIdleStop    = "idle_stop_seconds"
	fieldIdleDelete  = "idle_delete_seconds"
	fieldDescription = "description"
)

// Template is the view of an environment template.
type Template struct {
	ID          string
	WorkspaceID string
	// ProviderID is the environment provider the template's environments are
	// made on; it never changes.
	ProviderID        string
	Name              string
	Description       string
	Config            map[string]any
	IdleStopSeconds   *int32
	IdleDeleteSeconds *int32
	Labels            map[string]string
	Enabled           bool
	Version           int32
	CreatedByID       string
	UpdatedByID       string
	CreatedAt         time.Time
	UpdatedAt         time.Time
}

// ETag is the template's entity tag.
func (t Template) ETag() string { return resource.ETag(t.ID, t.Version) }

// Page is one page of a list, newest first; NextCursor is nil on the last page.
type Page = resource.Page[Template]

// CreateInput is a new template.
type CreateInput struct {
	Name        string
	Description string
	ProviderID  string
	// Config may be nil: the empty object (which the type's schema may refuse).
	Config            map[string]any
	IdleStopSeconds   *int
	IdleDeleteSeconds *int
	Labels            map[string]string
	// Enabled defaults to true when nil.
	Enabled *bool
}

// UpdateInput is a PATCH of a template: members left out keep their values.
type UpdateInput struct {
	ID          string
	IfMatch     *string
	Name        *string
	Description *string
	// Config replaces the whole config when not nil.
	Config map[string]any
	// The thresholds: a value sets, null removes (never stop or delete for
	// idleness), absent keeps.
	IdleStopSeconds   provider.Change[int]
	IdleDeleteSeconds provider.Change[int]
	// Labels replaces every label when not nil (an empty map removes them all).
	Labels  map[string]string
	Enabled *bool
}

// ListInput selects a page of templates.
type ListInput struct {
	Limit  *int
	Cursor *string
	// Labels are `key:value` selectors, all of which must match (at most 8).
	Labels []string
	// Q is a case-insensitive substring of the name or the description.
	Q *string
	// Archived: templates cannot be archived; a disabled template is the
	// closest state, so true lists disabled templates, false enabled ones,
	// nil both.
	Archived *bool
}

// validateThreshold checks one idle threshold's bounds.
func validateThreshold(field string, v *int) error {
	if v != nil && (*v < MinIdleSeconds || *v > MaxIdleSeconds) {
		return apperr.InvalidField(field, fmt.Sprintf("must be between %d and %d seconds, or null", MinIdleSeconds, MaxIdleSeconds))
	}
	return nil
}

// validateThresholds checks both thresholds as they will be stored.
func validateThresholds(stop, del *int) error {
	if err := validateThreshold(fieldIdleStop, stop); err != nil {
		return err
	}
	if err := validateThreshold(fieldIdleDelete, del); err != nil {
		return err
	}
	if stop != nil && del != nil && *del < *stop {
		return apperr.InvalidField(fieldIdleDelete, "must be at least idle_stop_seconds: an environment is stopped before it is deleted")
	}
	return nil
}

// templateOf maps a row to the view.
func templateOf(r db.EnvironmentTemplate) (Template, error) {
	cfg := map[string]any{}
	if len(r.Config) > 0 {
		if err := json.Unmarshal(r.Config, &cfg); err != nil {
			return Template{}, fmt.Errorf("environment template %s: stored config: %w", r.ID, err)
		}
	}
	l, err := labels.Decode(r.Labels)
	if err != nil {
		return Template{}, fmt.Errorf("environment template %s: stored labels: %w", r.ID, err)
	}
	return Template{
		ID: r.ID, WorkspaceID: r.WorkspaceID, ProviderID: r.ProviderID, Name: r.Name, Description: r.Description,
		Config: cfg, IdleStopSeconds: r.IdleStopSeconds, IdleDeleteSeconds: r.IdleDeleteSeconds, Labels: l,
		Enabled: r.Enabled, Version: r.Version, CreatedByID: r.CreatedByID, UpdatedByID: r.UpdatedByID,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}, nil
}

// canonical encodes a config as JSON with sorted keys; nil is the empty object.
func canonical(cfg map[string]any) ([]byte, error) {
	if cfg == nil {
		return []byte("{}"), nil
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, apperr.InvalidField("config", "must be a JSON object")
	}
	return raw, nil
}

// jsonUnmarshal decodes a stored JSON column; an empty one leaves v as it is.
func jsonUnmarshal(raw []byte, v any) error {
	if len(raw) == 0 {
		return nil
	}
	return json.Unmarshal(raw, v)
}
