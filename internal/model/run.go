package model

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/llm"
	"github.com/svcdev/svc/internal/provider"
	"github.com/svcdev/svc/internal/provider/catalog"
)

// Reason says why a run cannot use its model.
type Reason int

// The reasons of Unusable.
const (
	// Missing: no model with the key in the workspace.
	Missing Reason = iota + 1
	// Disabled: the model is disabled.
	Disabled
	// ProviderDisabled: the model's provider is disabled.
	ProviderDisabled
)

// Unusable is a model a run cannot use (the rule of usable). Its message is
// what the run's tenant reads when it fails a run already accepted.
type Unusable struct {
	Key    string
	Reason Reason
}

func (u *Unusable) Error() string {
	switch u.Reason {
	case Missing:
		return fmt.Sprintf("the model %q no longer exists", u.Key)
	case Disabled:
		return fmt.Sprintf("the model %q is disabled", u.Key)
	default:
		return fmt.Sprintf("the provider of model %q is disabled", u.Key)
	}
}

// usable is the one rule on a run's model: the model exists in the
// workspace, it is enabled, and so is its provider. A run is not accepted on
// a model that breaks it (RequireUsable), and a run whose model broke it
// since the run was accepted fails at its next attempt (Service.Open); nil
// when the model may be used.
func usable(key string, found, enabled, providerEnabled bool) *Unusable {
	switch {
	case !found:
		return &Unusable{Key: key, Reason: Missing}
	case !enabled:
		return &Unusable{Key: key, Reason: Disabled}
	case !providerEnabled:
		return &Unusable{Key: key, Reason: ProviderDisabled}
	}
	return nil
}

// refusal is u as the API answers a run that cannot start: 404 naming the
// model, or 409 disabled naming the model or its provider.
func (u *Unusable) refusal() error {
	switch u.Reason {
	case Missing:
		return apperr.NotFoundField("model not found", "model", fmt.Sprintf("the agent's model %q does not exist in the workspace", u.Key))
	case Disabled:
		return &apperr.Error{Kind: apperr.KindDisabled, Msg: "the model is disabled",
			Details: []apperr.Detail{{Field: "model", Reason: fmt.Sprintf("model %q is disabled", u.Key)}}}
	default:
		return &apperr.Error{Kind: apperr.KindDisabled, Msg: "the provider is disabled",
			Details: []apperr.Detail{{Field: "model.provider_id", Reason: "the provider is disabled"}}}
	}
}

// RequireUsable checks, in tx (the transaction that starts a run), that a run
// may start on model key of the workspace: the rule of usable, refused with
// 404 not_found or 409 disabled, and a provider type this binary has (else 409
// conflict). The provider is locked FOR SHARE, so a concurrent disable is
// either seen or waits until tx ends.
func RequireUsable(ctx context.Context, tx pgx.Tx, reg *catalog.Registry, workspaceID, key string) error {
	row, err := db.New().ModelForRunStart(ctx, tx, db.ModelForRunStartParams{WorkspaceID: workspaceID, Key: key})
	if err != nil && !dbx.IsNotFound(err) {
		return err
	}
	if u := usable(key, err == nil, row.Enabled, row.ProviderEnabled); u != nil {
		return u.refusal()
	}
	if _, ok := reg.Lookup(row.ProviderType); !ok {
		return apperr.New(apperr.KindConflict, fmt.Sprintf("provider type %q is not installed", row.ProviderType))
	}
	return nil
}

// Uncallable is a model whose adapter refuses its provider's type, API,
// config or credential: the run fails.
type Uncallable struct {
	Key string
	Err error
}

func (u *Uncallable) Error() string {
	return fmt.Sprintf("model %q cannot be called: %v", u.Key, u.Err)
}
func (u *Uncallable) Unwrap() error { return u.Err }

// Opened is a model opened for an attempt of a run.
type Opened struct {
	// Model is the adapter; Name the vendor's model name; ProviderType
	// the provider's type (its catalog id).
	Model        llm.Model
	Name         string
	ProviderType string
	// ContextWindow is the model's context window in tokens: its own, else
	// the provider type's default for its name (catalog.ContextWindow); 0
	// when unknown.
	ContextWindow int
	// MaxOutputTokens is the settings' max_output_tokens; 0 when unset.
	MaxOutputTokens int
}

// Open opens model key of the workspace for an attempt of a run, from the
// model and its provider as they are now (one read): the provider's secrets
// opened, the adapter of its type and API sending through client, and the
// model's settings sent with every request. A model the rule of usable
// refuses is *Unusable, one its adapter refuses *Uncallable: both fail the
// run; any other error is the attempt's.
func (s *Service) Open(ctx context.Context, workspaceID, key string, client *http.Client) (Opened, error) {
	row, err := s.q.ModelForRun(ctx, s.pool, db.ModelForRunParams{WorkspaceID: workspaceID, Key: key})
	if err != nil && !dbx.IsNotFound(err) {
		return Opened{}, fmt.Errorf("read model %s: %w", key, err)
	}
	if u := usable(key, err == nil, row.Model.Enabled, row.ProviderEnabled); u != nil {
		return Opened{}, u
	}
	m := row.Model
	sec, err := provider.OpenSealed(s.ring, m.ProviderID, row.ProviderCredential, row.ProviderExtraHeaders)
	if err != nil {
		return Opened{}, err
	}
	var cred json.RawMessage
	if sec.Credential != nil {
		if cred, err = json.Marshal(sec.Credential); err != nil {
			return Opened{}, err
		}
	}
	adapter, err := llm.ForProvider(llm.ProviderSpec{
		Type: row.ProviderType, API: m.Api, Config: row.ProviderConfig, Credential: cred, Headers: sec.ExtraHeaders,
		HTTPClient: client, Registry: s.reg,
	})
	if err != nil {
		return Opened{}, &Uncallable{Key: key, Err: err}
	}
	o := Opened{Model: settingsModel{Model: adapter, settings: m.Settings}, Name: m.Model, ProviderType: row.ProviderType,
		ContextWindow: catalog.ContextWindow(m.Api, m.Model)}
	if m.ContextWindow != nil {
		o.ContextWindow = int(*m.ContextWindow)
	}
	if settings, err := decodeSettings(m.Settings); err == nil {
		o.MaxOutputTokens = maxOutputTokens(settings)
	}
	return o, nil
}

// settingsModel sends a model's settings with every request.
type settingsModel struct {
	llm.Model
	settings json.RawMessage
}

func (m settingsModel) Stream(ctx context.Context, req llm.Request, fn func(llm.Event) error) (llm.Response, error) {
	req.Settings = m.settings
	return m.Model.Stream(ctx, req, fn)
}
