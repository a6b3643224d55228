package connection

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/audit"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/provider"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/resource"
	"github.com/svcdev/svc/internal/secret"
)

// Defaults of Options.
const (
	// DefaultAuthorizationTTL is how long a user has to complete an
	// authorization: its deadline is this long after it starts.
	DefaultAuthorizationTTL = 10 * time.Minute
	// DefaultOwnerLease is how long an owner's heartbeat keeps its operations:
	// an owner that has not renewed it for this long has disappeared.
	DefaultOwnerLease = time.Minute
	// DefaultDriveInterval is how often an owner polls the vendor about each
	// of its pending operations (and renews its lease).
	DefaultDriveInterval = 3 * time.Second
)

// Options configures a Service.
type Options struct {
	// Owner names this process in the operations it starts or takes over: the
	// replica id.
	Owner string
	// AuthorizationTTL, OwnerLease and DriveInterval default to the constants.
	AuthorizationTTL time.Duration
	OwnerLease       time.Duration
	DriveInterval    time.Duration
	// Timeout bounds each vendor call (providers.probe_timeout_seconds).
	Timeout time.Duration
	Log     *slog.Logger
}

// Service manages the connections of the caller's workspace and drives their
// authorization operations. Each request method is one transaction, apart
// from starting an authorization, which calls the vendor between two.
type Service struct {
	pool    *pgxpool.Pool
	q       *db.Queries
	ring    *keyring.Ring
	reg     *catalog.Registry
	vendors Vendors
	opts    Options
	log     *slog.Logger
}

// NewService returns a service over pool that validates against the connector
// types of reg, seals with ring and authorizes through vendors.
func NewService(pool *pgxpool.Pool, ring *keyring.Ring, reg *catalog.Registry, vendors Vendors, opts Options) *Service {
	if opts.AuthorizationTTL <= 0 {
		opts.AuthorizationTTL = DefaultAuthorizationTTL
	}
	if opts.OwnerLease <= 0 {
		opts.OwnerLease = DefaultOwnerLease
	}
	if opts.DriveInterval <= 0 {
		opts.DriveInterval = DefaultDriveInterval
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{pool: pool, q: db.New(), ring: ring, reg: reg, vendors: vendors, opts: opts, log: log}
}

// Create creates a connection in the caller's workspace. The provider is
// locked FOR SHARE while the connection is written, so a concurrent disable of
// the provider is either seen (409 disabled) or waits for the connection.
func (s *Service) Create(ctx context.Context, c *auth.Caller, in CreateInput) (Connection, error) {
	if err := auth.Require(c, auth.PermWrite); err != nil {
		return Connection{}, err
	}
	if err := provider.ValidateName(in.Name); err != nil {
		return Connection{}, err
	}
	if err := validateApp(in.App); err != nil {
		return Connection{}, err
	}
	if err := validateAccount(in.Account); err != nil {
		return Connection{}, err
	}
	cfg, err := canonical(in.Config)
	if err != nil {
		return Connection{}, err
	}
	cid := id.New(id.Connection)
	cred, err := secret.Seal(s.ring, cid, in.Credential)
	if err != nil {
		return Connection{}, err
	}
	enabled := in.Enabled == nil || *in.Enabled
	return dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Connection, error) {
		p, err := s.provider(ctx, tx, c.WorkspaceID, in.ProviderID, "provider_id", true)
		if err != nil {
			return Connection{}, err
		}
		if err := p.typ.ValidateConnectionConfig(in.Config); err != nil {
			return Connection{}, err
		}
		fields := []string{"app", "config", "enabled", "name", "provider_id"}
		if in.Credential != nil {
			if err := p.typ.ValidateConnectionCredential(in.Credential); err != nil {
				return Connection{}, err
			}
			fields = append(fields, "credential")
		}
		if in.Account != nil {
			fields = append(fields, "account")
		}
		row, err := s.q.ConnectionInsert(ctx, tx, db.ConnectionInsertParams{
			ID: cid, WorkspaceID: c.WorkspaceID, ProviderID: p.row.ID, App: in.App, Account: in.Account, Name: in.Name,
			Config: cfg, Credential: cred, Enabled: enabled, CreatedByID: c.PrincipalID,
		})
		if err != nil {
			return Connection{}, err
		}
		if err := s.record(ctx, tx, c.OrganizationID, c.PrincipalID, "connection.created", row, sorted(fields)); err != nil {
			return Connection{}, err
		}
		return connectionOf(row)
	})
}

// List lists the connections of the caller's workspace, newest first.
func (s *Service) List(ctx context.Context, c *auth.Caller, limit *int, cursor *string) (Page, error) {
	if err := auth.Require(c, auth.PermRead); err != nil {
		return Page{}, err
	}
	after, err := resource.AfterID(cursor)
	if err != nil {
		return Page{}, err
	}
	n := resource.Limit(limit)
	rows, err := s.q.ConnectionList(ctx, s.pool, db.ConnectionListParams{WorkspaceID: c.WorkspaceID, AfterID: after, PageLimit: resource.Fetch(n)})
	if err != nil {
		return Page{}, dbx.Translate(err, "connection")
	}
	return resource.PageOfErr(rows, n, connectionOf, func(r db.Connection) string { return r.ID })
}

// Get reads a connection of the caller's workspace; an id of another
// workspace is not found.
func (s *Service) Get(ctx context.Context, c *auth.Caller, connectionID string) (Connection, error) {
	if err := auth.Require(c, auth.PermRead); err != nil {
		return Connection{}, err
	}
	row, err := s.q.ConnectionGet(ctx, s.pool, db.ConnectionGetParams{WorkspaceID: c.WorkspaceID, ID: connectionID})
	if err != nil {
		return Connection{}, dbx.Translate(err, "connection")
	}
	return connectionOf(row)
}

// RequireUsable checks that the connection connectionID of the caller's
// workspace may be newly used, for a resource that refers to it (an agent's
// tools, say) under the request member field: an id of another workspace or
// an absent one is 404 not_found naming field; a disabled connection, or one
// whose provider is disabled, is 409 disabled naming field. Whether a
// credential is stored is not checked: a connection may be referred to before
// its authorization completes, and the run that uses it reports a missing one.
func (s *Service) RequireUsable(ctx context.Context, c *auth.Caller, field, connectionID string) (Connection, error) {
	return dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Connection, error) {
		return s.RequireUsableTx(ctx, tx, c, field, connectionID)
	})
}

// RequireUsableTx is RequireUsable inside the caller's transaction: the
// connection and its provider stay locked FOR SHARE until tx ends, so a
// concurrent disable either is seen here or waits until the referring
// resource is written.
func (s *Service) RequireUsableTx(ctx context.Context, tx pgx.Tx, c *auth.Caller, field, connectionID string) (Connection, error) {
	if err := auth.Require(c, auth.PermRead); err != nil {
		return Connection{}, err
	}
	return s.UsableTx(ctx, tx, c.WorkspaceID, field, connectionID)
}

// UsableTx is RequireUsableTx for a caller already allowed to refer to the
// workspace's connections: the reference checks of a resource being written
// (an agent revision's tools), which name the workspace rather than a caller.
func (s *Service) UsableTx(ctx context.Context, tx pgx.Tx, workspaceID, field, connectionID string) (Connection, error) {
	row, err := s.q.ConnectionGetForShare(ctx, tx, db.ConnectionGetForShareParams{WorkspaceID: workspaceID, ID: connectionID})
	if dbx.IsNotFound(err) {
		return Connection{}, apperr.NotFoundField("connection not found", field, "no connection with this id in the workspace")
	}
	if err != nil {
		return Connection{}, err
	}
	if !row.Enabled {
		return Connection{}, &apperr.Error{Kind: apperr.KindDisabled, Msg: "the connection is disabled",
			Details: []apperr.Detail{{Field: field, Reason: "the connection is disabled"}}}
	}
	if _, err := s.provider(ctx, tx, workspaceID, row.ProviderID, field, true); err != nil {
		if apperr.KindOf(err) == apperr.KindDisabled {
			return Connection{}, &apperr.Error{Kind: apperr.KindDisabled, Msg: "the connection's provider is disabled",
				Details: []apperr.Detail{{Field: field, Reason: "the connection's connector provider is disabled"}}}
		}
		return Connection{}, err
	}
	return connectionOf(row)
}

// connector is a connection's provider, locked FOR SHARE, with its type.
type connector struct {
	row db.ConnectionProviderForShareRow
	typ catalog.Type
}

// provider locks the connector provider providerID of the caller's workspace
// FOR SHARE and returns it with its type, like a model's provider check. An id
// of another workspace, an absent one and a provider of another kind are the
// same 404 naming field; a disabled one is 409 disabled naming field when
// newUse.
func (s *Service) provider(ctx context.Context, tx pgx.Tx, workspaceID, providerID, field string, newUse bool) (connector, error) {
	notFound := apperr.NotFoundField("provider not found", field, "no connector provider with this id in the workspace")
	row, err := s.q.ConnectionProviderForShare(ctx, tx, db.ConnectionProviderForShareParams{WorkspaceID: workspaceID, ID: providerID})
	if dbx.IsNotFound(err) {
		return connector{}, notFound
	}
	if err != nil {
		return connector{}, err
	}
	if row.Kind != string(catalog.KindConnector) {
		return connector{}, notFound
	}
	if newUse && !row.Enabled {
		return connector{}, &apperr.Error{Kind: apperr.KindDisabled, Msg: "the provider is disabled",
			Details: []apperr.Detail{{Field: field, Reason: "the provider is disabled"}}}
	}
	t, ok := s.reg.Lookup(row.Type)
	if !ok || t.Connector == nil {
		return connector{}, apperr.New(apperr.KindConflict, fmt.Sprintf("connector provider type %q is not installed", row.Type))
	}
	return connector{row: row, typ: t}, nil
}

// record writes the audit event of a change to a connection.
func (s *Service) record(ctx context.Context, tx pgx.Tx, organizationID, actorID, action string, row db.Connection, fields []string) error {
	return audit.Record(ctx, tx, audit.Event{
		OrganizationID: organizationID, WorkspaceID: row.WorkspaceID, ActorID: actorID,
		Action: action, SubjectType: "connection", SubjectID: row.ID, Version: &row.Version, ChangedFields: fields,
	})
}
