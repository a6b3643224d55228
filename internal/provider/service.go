package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/audit"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/provider/probe"
	"github.com/svcdev/svc/internal/resource"
	"github.com/svcdev/svc/internal/secret"
)

// ErrSecretUnreadable wraps the key ring's error when a stored secret cannot be
// opened: its key left the ring, or the ciphertext was altered or moved from
// another row (the provider id is its associated data). It is the shared
// secret.ErrUnreadable.
var ErrSecretUnreadable = secret.ErrUnreadable

// Service manages the providers of the caller's workspace. Each method is one
// transaction; secrets are sealed with the key ring, bound to the provider id.
type Service struct {
	pool   *pgxpool.Pool
	q      *db.Queries
	ring   *keyring.Ring
	reg    *catalog.Registry
	policy *endpoint.Policy
	prober *probe.Prober
	// endpoints lists the URL members of each type's config, by type id.
	endpoints map[string][]string
	// checks are the operator's rules on a type's config, by type id.
	checks map[string]ConfigCheck
}

// ConfigCheck is an operator's rule on a provider type's configuration
// beyond its schema (what a deployment allows, such as the docker type's
// networks); it returns an invalid_argument error naming config.<member>.
type ConfigCheck func(cfg map[string]any) error

// SetConfigCheck adds check to the validation of the configs of type
// typeID when a provider is created or its config changes. Call it before
// the service is used.
func (s *Service) SetConfigCheck(typeID string, check ConfigCheck) {
	if s.checks == nil {
		s.checks = map[string]ConfigCheck{}
	}
	s.checks[typeID] = check
}

// NewService returns a service over pool that validates against reg and policy,
// seals with ring and tests providers with prober.
func NewService(pool *pgxpool.Pool, ring *keyring.Ring, reg *catalog.Registry, policy *endpoint.Policy, prober *probe.Prober) *Service {
	s := &Service{pool: pool, q: db.New(), ring: ring, reg: reg, policy: policy, prober: prober, endpoints: map[string][]string{}}
	for _, k := range catalog.Kinds {
		for _, t := range reg.List(k) {
			s.endpoints[t.ID] = endpointFields(t)
		}
	}
	return s
}

// Create creates a provider of kind k in the caller's workspace.
func (s *Service) Create(ctx context.Context, c *auth.Caller, k catalog.Kind, in CreateInput) (Provider, error) {
	if err := auth.Require(c, auth.PermWrite); err != nil {
		return Provider{}, err
	}
	if err := ValidateName(in.Name); err != nil {
		return Provider{}, err
	}
	t, err := s.reg.Resolve(k, in.Type)
	if err != nil {
		return Provider{}, err
	}
	if err := s.validateConfig(ctx, t, in.Config, in.Credential); err != nil {
		return Provider{}, err
	}
	fields := []string{"type", "name", "config"}
	switch {
	case in.Credential != nil:
		if err := t.ValidateCredential(in.Credential); err != nil {
			return Provider{}, err
		}
		fields = append(fields, "credential")
	case t.CredentialRequired:
		return Provider{}, apperr.InvalidField("credential", fmt.Sprintf("is required by the %s type", t.ID))
	}
	if in.ExtraHeaders != nil {
		if k != catalog.KindModel {
			return Provider{}, apperr.InvalidField("extra_headers", "only model providers take extra headers")
		}
		if err := validateExtraHeaders(in.ExtraHeaders); err != nil {
			return Provider{}, err
		}
		fields = append(fields, "extra_headers")
	}
	cfg, err := canonical(in.Config)
	if err != nil {
		return Provider{}, err
	}
	pid := id.New(id.Provider)
	cred, err := s.seal(pid, in.Credential)
	if err != nil {
		return Provider{}, err
	}
	headers, err := s.seal(pid, in.ExtraHeaders)
	if err != nil {
		return Provider{}, err
	}
	return dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Provider, error) {
		row, err := s.q.ProviderInsert(ctx, tx, db.ProviderInsertParams{
			ID: pid, WorkspaceID: c.WorkspaceID, Kind: string(k), Type: t.ID, Name: in.Name, Config: cfg,
			Credential: cred, ExtraHeaders: headers, ExtraHeaderNames: headerNames(in.ExtraHeaders), CreatedByID: c.PrincipalID,
		})
		if err != nil {
			return Provider{}, err
		}
		if err := s.record(ctx, tx, c, "provider.created", row, fields); err != nil {
			return Provider{}, err
		}
		return providerOf(row)
	})
}

// List lists the providers of kind k in the caller's workspace, newest first.
func (s *Service) List(ctx context.Context, c *auth.Caller, k catalog.Kind, limit *int, cursor *string) (Page, error) {
	if err := auth.Require(c, auth.PermRead); err != nil {
		return Page{}, err
	}
	after, err := resource.AfterID(cursor)
	if err != nil {
		return Page{}, err
	}
	n := resource.Limit(limit)
	rows, err := s.q.ProviderList(ctx, s.pool, db.ProviderListParams{WorkspaceID: c.WorkspaceID, Kind: string(k), AfterID: after, PageLimit: resource.Fetch(n)})
	if err != nil {
		return Page{}, dbx.Translate(err, "provider")
	}
	return resource.PageOfErr(rows, n, providerOf, func(r db.Provider) string { return r.ID })
}

// Get reads a provider of kind k in the caller's workspace; an id of another
// workspace or kind is not found.
func (s *Service) Get(ctx context.Context, c *auth.Caller, k catalog.Kind, providerID string) (Provider, error) {
	if err := auth.Require(c, auth.PermRead); err != nil {
		return Provider{}, err
	}
	row, err := s.q.ProviderGet(ctx, s.pool, db.ProviderGetParams{WorkspaceID: c.WorkspaceID, Kind: string(k), ID: providerID})
	if err != nil {
		return Provider{}, dbx.Translate(err, "provider")
	}
	return providerOf(row)
}

// Secrets are a provider's opened credential and extra headers, for the code
// that calls the vendor. Never put them in a view, a log or an error.
type Secrets struct {
	Credential   map[string]any    // nil when none is stored
	ExtraHeaders map[string]string // nil when none are stored
}

// OpenSecrets opens the stored secrets of a provider of kind k in the caller's
// workspace. A secret that cannot be opened fails with an error wrapping
// ErrSecretUnreadable and the key ring's reason; it never yields garbage.
func (s *Service) OpenSecrets(ctx context.Context, c *auth.Caller, k catalog.Kind, providerID string) (Secrets, error) {
	if err := auth.Require(c, auth.PermRun); err != nil {
		return Secrets{}, err
	}
	row, err := s.q.ProviderGet(ctx, s.pool, db.ProviderGetParams{WorkspaceID: c.WorkspaceID, Kind: string(k), ID: providerID})
	if err != nil {
		return Secrets{}, dbx.Translate(err, "provider")
	}
	var out Secrets
	if err := s.open(row.ID, row.Credential, &out.Credential); err != nil {
		return Secrets{}, err
	}
	if err := s.open(row.ID, row.ExtraHeaders, &out.ExtraHeaders); err != nil {
		return Secrets{}, err
	}
	return out, nil
}

// seal encodes v as JSON and seals it bound to the provider id; a nil map
// seals to nil (nothing stored).
func (s *Service) seal(providerID string, v any) ([]byte, error) {
	return secret.Seal(s.ring, providerID, v)
}

// open opens a sealed secret of the provider into out; nil sealed leaves out
// untouched.
func (s *Service) open(providerID string, sealed []byte, out any) error {
	return secret.Open(s.ring, providerID, sealed, out)
}

// record writes the audit event of a change to row.
func (s *Service) record(ctx context.Context, tx pgx.Tx, c *auth.Caller, action string, row db.Provider, fields []string) error {
	return audit.Record(ctx, tx, audit.Event{
		OrganizationID: c.OrganizationID, WorkspaceID: row.WorkspaceID, ActorID: c.PrincipalID,
		Action: action, SubjectType: row.Kind + "_provider", SubjectID: row.ID, Version: &row.Version, ChangedFields: fields,
	})
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

// headerNames lists the names of extra headers for the clear column.
func headerNames(h map[string]string) []string {
	out := make([]string, 0, len(h))
	for name := range h {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}
