package subscription

import (
	"context"
	"errors"
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
	"github.com/svcdev/svc/internal/resource"
)

// ErrSecretUnreadable wraps the key ring's error when a stored secret cannot
// be opened: its key left the ring, or the value was altered or moved from
// another row (the subscription id is its associated data).
var ErrSecretUnreadable = errors.New("subscription secret cannot be opened")

// DefaultMaxPerWorkspace is the default of limits.subscriptions_per_workspace.
const DefaultMaxPerWorkspace = 20

// Service manages the webhook subscriptions of the caller's workspace. Each
// method is one transaction; every one needs the admin permission.
type Service struct {
	pool   *pgxpool.Pool
	q      *db.Queries
	ring   *keyring.Ring
	policy *endpoint.Policy
	// max bounds the subscriptions of one workspace.
	max int
}

// Option configures a Service.
type Option func(*Service)

// WithMaxPerWorkspace bounds the subscriptions of one workspace
// (limits.subscriptions_per_workspace; DefaultMaxPerWorkspace). Zero or less
// keeps the default.
func WithMaxPerWorkspace(n int) Option {
	return func(s *Service) {
		if n > 0 {
			s.max = n
		}
	}
}

// NewService returns a service over pool that checks endpoints with policy
// and seals secrets with ring.
func NewService(pool *pgxpool.Pool, ring *keyring.Ring, policy *endpoint.Policy, opts ...Option) *Service {
	s := &Service{pool: pool, q: db.New(), ring: ring, policy: policy, max: DefaultMaxPerWorkspace}
	for _, opt := range opts {
		opt(s)
	}
	return s
}

// Create creates a subscription and its signing secret, which the answer
// carries: the only time it is shown, with rotation. A workspace that has its
// maximum of subscriptions already is refused with conflict; the creates of
// one workspace are serialized for the count, so concurrent ones cannot pass
// the maximum together.
func (s *Service) Create(ctx context.Context, c *auth.Caller, in CreateInput) (WithSecret, error) {
	if err := auth.Require(c, auth.PermAdmin); err != nil {
		return WithSecret{}, err
	}
	if err := resource.ValidateDescription("description", in.Description); err != nil {
		return WithSecret{}, err
	}
	types, err := normalizeEventTypes(in.EventTypes)
	if err != nil {
		return WithSecret{}, err
	}
	// The policy may resolve the host: done before the transaction.
	if err := s.policy.CheckURL(ctx, "url", in.URL); err != nil {
		return WithSecret{}, err
	}
	subID := id.New(id.Subscription)
	secret, sealed, err := s.newSealedSecret(subID)
	if err != nil {
		return WithSecret{}, err
	}
	enabled := in.Enabled == nil || *in.Enabled
	return dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (WithSecret, error) {
		if err := s.checkRoom(ctx, tx, c.WorkspaceID); err != nil {
			return WithSecret{}, err
		}
		row, err := s.q.SubscriptionInsert(ctx, tx, db.SubscriptionInsertParams{
			ID: subID, WorkspaceID: c.WorkspaceID, Url: in.URL, EventTypes: types, Enabled: enabled,
			Description: in.Description, Secret: sealed, CreatedByID: c.PrincipalID,
		})
		if err != nil {
			return WithSecret{}, err
		}
		fields := []string{"description", "enabled", "event_types", "secret", "url"}
		if err := s.record(ctx, tx, c, "subscription.created", row, fields); err != nil {
			return WithSecret{}, err
		}
		return WithSecret{Subscription: subscriptionOf(row), Secret: secret}, nil
	})
}

// checkRoom refuses a create when the workspace has s.max subscriptions. It
// holds the workspace's create lock until tx ends.
func (s *Service) checkRoom(ctx context.Context, tx pgx.Tx, workspaceID string) error {
	if err := s.q.SubscriptionLockCreate(ctx, tx, workspaceID); err != nil {
		return err
	}
	n, err := s.q.SubscriptionCount(ctx, tx, workspaceID)
	if err != nil {
		return err
	}
	if int(n) >= s.max {
		return apperr.New(apperr.KindConflict, fmt.Sprintf(
			"the workspace has %d webhook subscriptions, the most limits.subscriptions_per_workspace allows (%d); delete one before creating another", n, s.max))
	}
	return nil
}

// List lists the subscriptions of the caller's workspace, newest first.
func (s *Service) List(ctx context.Context, c *auth.Caller, limit *int, cursor *string) (Page, error) {
	if err := auth.Require(c, auth.PermAdmin); err != nil {
		return Page{}, err
	}
	after, err := resource.AfterID(cursor)
	if err != nil {
		return Page{}, err
	}
	n := resource.Limit(limit)
	rows, err := s.q.SubscriptionList(ctx, s.pool, db.SubscriptionListParams{WorkspaceID: c.WorkspaceID, AfterID: after, PageLimit: resource.Fetch(n)})
	if err != nil {
		return Page{}, dbx.Translate(err, "subscription")
	}
	page := resource.PageOf(rows, n, subscriptionOf, func(r db.Subscription) string { return r.ID })
	if err := s.withHealth(ctx, s.pool, page.Items); err != nil {
		return Page{}, err
	}
	return page, nil
}

// withHealth fills in the endpoint health of subs.
func (s *Service) withHealth(ctx context.Context, q db.DBTX, subs []Subscription) error {
	if len(subs) == 0 {
		return nil
	}
	ids := make([]string, len(subs))
	for i, sub := range subs {
		ids[i] = sub.ID
	}
	rows, err := s.q.SubscriptionEndpointHealth(ctx, q, ids)
	if err != nil {
		return dbx.Translate(err, "subscription")
	}
	for _, r := range rows {
		for i := range subs {
			if subs[i].ID == r.SubscriptionID {
				subs[i].Endpoint = EndpointHealth{ConsecutiveFailures: r.Failures, PausedUntil: r.PausedUntil}
			}
		}
	}
	return nil
}

// withHealthOf is withHealth for one subscription.
func (s *Service) withHealthOf(ctx context.Context, q db.DBTX, sub Subscription) (Subscription, error) {
	subs := []Subscription{sub}
	err := s.withHealth(ctx, q, subs)
	return subs[0], err
}

// Get reads a subscription of the caller's workspace, without its secret.
func (s *Service) Get(ctx context.Context, c *auth.Caller, subID string) (Subscription, error) {
	if err := auth.Require(c, auth.PermAdmin); err != nil {
		return Subscription{}, err
	}
	row, err := s.q.SubscriptionGet(ctx, s.pool, db.SubscriptionGetParams{WorkspaceID: c.WorkspaceID, ID: subID})
	if err != nil {
		return Subscription{}, dbx.Translate(err, "subscription")
	}
	return s.withHealthOf(ctx, s.pool, subscriptionOf(row))
}

// Update changes a subscription. The If-Match check and the write happen on
// the row locked in one transaction, so of two writers holding the same ETag
// exactly one wins. A change to nothing keeps the version and records no
// audit event. A given url must pass the endpoint policy as it is now.
func (s *Service) Update(ctx context.Context, c *auth.Caller, in UpdateInput) (Subscription, error) {
	if err := auth.Require(c, auth.PermAdmin); err != nil {
		return Subscription{}, err
	}
	if in.Description != nil {
		if err := resource.ValidateDescription("description", *in.Description); err != nil {
			return Subscription{}, err
		}
	}
	var types []string
	if in.EventTypes != nil {
		var err error
		if types, err = normalizeEventTypes(in.EventTypes); err != nil {
			return Subscription{}, err
		}
	}
	if in.URL != nil {
		if err := s.policy.CheckURL(ctx, "url", *in.URL); err != nil {
			return Subscription{}, err
		}
	}
	return dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Subscription, error) {
		row, err := s.q.SubscriptionGetForUpdate(ctx, tx, db.SubscriptionGetForUpdateParams{WorkspaceID: c.WorkspaceID, ID: in.ID})
		if err != nil {
			return Subscription{}, dbx.Translate(err, "subscription")
		}
		if err := resource.CheckIfMatch(in.IfMatch, row.ID, row.Version); err != nil {
			return Subscription{}, err
		}
		p := db.SubscriptionUpdateParams{
			ID: row.ID, Url: row.Url, EventTypes: row.EventTypes, Enabled: row.Enabled, Description: row.Description,
			Secret: row.Secret, UpdatedByID: c.PrincipalID,
		}
		var fields []string
		if in.Description != nil && *in.Description != row.Description {
			p.Description, fields = *in.Description, append(fields, "description")
		}
		if in.Enabled != nil && *in.Enabled != row.Enabled {
			p.Enabled, fields = *in.Enabled, append(fields, "enabled")
		}
		if types != nil && !slices.Equal(types, subscriptionOf(row).EventTypes) {
			p.EventTypes, fields = types, append(fields, "event_types")
		}
		if in.URL != nil && *in.URL != row.Url {
			p.Url, fields = *in.URL, append(fields, "url")
		}
		if len(fields) == 0 {
			return s.withHealthOf(ctx, tx, subscriptionOf(row))
		}
		row, err = s.q.SubscriptionUpdate(ctx, tx, p)
		if err != nil {
			return Subscription{}, err
		}
		if err := s.record(ctx, tx, c, "subscription.updated", row, fields); err != nil {
			return Subscription{}, err
		}
		return s.withHealthOf(ctx, tx, subscriptionOf(row))
	})
}

// RotateSecret replaces a subscription's signing secret with a new one, which
// the answer carries (the only time it is shown). The old secret stops
// signing at once. It is a change like any other: If-Match, version + 1, an
// audit event naming `secret`.
func (s *Service) RotateSecret(ctx context.Context, c *auth.Caller, subID string, ifMatch *string) (WithSecret, error) {
	if err := auth.Require(c, auth.PermAdmin); err != nil {
		return WithSecret{}, err
	}
	return dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (WithSecret, error) {
		row, err := s.q.SubscriptionGetForUpdate(ctx, tx, db.SubscriptionGetForUpdateParams{WorkspaceID: c.WorkspaceID, ID: subID})
		if err != nil {
			return WithSecret{}, dbx.Translate(err, "subscription")
		}
		if err := resource.CheckIfMatch(ifMatch, row.ID, row.Version); err != nil {
			return WithSecret{}, err
		}
		secret, sealed, err := s.newSealedSecret(row.ID)
		if err != nil {
			return WithSecret{}, err
		}
		row, err = s.q.SubscriptionUpdate(ctx, tx, db.SubscriptionUpdateParams{
			ID: row.ID, Url: row.Url, EventTypes: row.EventTypes, Enabled: row.Enabled, Description: row.Description,
			Secret: sealed, UpdatedByID: c.PrincipalID,
		})
		if err != nil {
			return WithSecret{}, err
		}
		if err := s.record(ctx, tx, c, "subscription.secret_rotated", row, []string{"secret"}); err != nil {
			return WithSecret{}, err
		}
		sub, err := s.withHealthOf(ctx, tx, subscriptionOf(row))
		return WithSecret{Subscription: sub, Secret: secret}, err
	})
}

// Delete deletes a subscription: no further deliveries are made to it. The
// row is locked FOR UPDATE, so of two deletes holding the same ETag one wins
// and the other finds nothing (404).
func (s *Service) Delete(ctx context.Context, c *auth.Caller, subID string, ifMatch *string) error {
	if err := auth.Require(c, auth.PermAdmin); err != nil {
		return err
	}
	return dbx.WithTx(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) error {
		row, err := s.q.SubscriptionGetForUpdate(ctx, tx, db.SubscriptionGetForUpdateParams{WorkspaceID: c.WorkspaceID, ID: subID})
		if err != nil {
			return dbx.Translate(err, "subscription")
		}
		if err := resource.CheckIfMatch(ifMatch, row.ID, row.Version); err != nil {
			return err
		}
		if err := s.q.SubscriptionDelete(ctx, tx, row.ID); err != nil {
			return err
		}
		return s.record(ctx, tx, c, "subscription.deleted", row, []string{})
	})
}

// OpenSecret returns the signing secret of a subscription of the workspace,
// for the code that signs its deliveries. Never put it in a view, a log or an
// error. A secret that cannot be opened fails with an error wrapping
// ErrSecretUnreadable; it never yields garbage.
func (s *Service) OpenSecret(ctx context.Context, workspaceID, subID string) (string, error) {
	row, err := s.q.SubscriptionGet(ctx, s.pool, db.SubscriptionGetParams{WorkspaceID: workspaceID, ID: subID})
	if err != nil {
		return "", dbx.Translate(err, "subscription")
	}
	return OpenStoredSecret(s.ring, row.ID, row.Secret)
}

// OpenStoredSecret opens sealed, the stored secret column of subscription
// subID, with ring: for a sender that read the row itself. The same rules as
// OpenSecret apply: never show it; an error wraps ErrSecretUnreadable.
func OpenStoredSecret(ring *keyring.Ring, subID string, sealed []byte) (string, error) {
	plain, err := ring.Open(sealed, []byte(subID))
	if err != nil {
		return "", fmt.Errorf("%w: subscription %s: %w", ErrSecretUnreadable, subID, err)
	}
	return string(plain), nil
}

// newSealedSecret makes a signing secret and seals it bound to the
// subscription's id.
func (s *Service) newSealedSecret(subID string) (string, []byte, error) {
	secret, err := newSecret()
	if err != nil {
		return "", nil, err
	}
	sealed, err := s.ring.Seal([]byte(secret), []byte(subID))
	if err != nil {
		return "", nil, fmt.Errorf("seal subscription secret: %w", err)
	}
	return secret, sealed, nil
}

// record writes the audit event of a change to row.
func (s *Service) record(ctx context.Context, tx pgx.Tx, c *auth.Caller, action string, row db.Subscription, fields []string) error {
	return audit.Record(ctx, tx, audit.Event{
		OrganizationID: c.OrganizationID, WorkspaceID: row.WorkspaceID, ActorID: c.PrincipalID,
		Action: action, SubjectType: "subscription", SubjectID: row.ID, Version: &row.Version, ChangedFields: fields,
	})
}
