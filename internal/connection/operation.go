package connection

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/audit"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/resource"
	"github.com/svcdev/svc/internal/secret"
)

// Operation is the view of a connection authorization operation.
type Operation struct {
	ID           string
	WorkspaceID  string
	ConnectionID string
	Status       Status
	// RedirectURL is where the user goes to consent; nil until the vendor gave
	// it, and once the operation is settled.
	RedirectURL *string
	// Error says why it failed or expired; nil otherwise.
	Error *string
	// Owner is the process that drives the operation; Deadline is when it
	// expires if the user has not completed it.
	Owner       string
	Deadline    time.Time
	Version     int32
	CreatedByID string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	SettledAt   *time.Time
}

// ETag is the operation's entity tag.
func (o Operation) ETag() string { return resource.ETag(o.ID, o.Version) }

// operationOf maps a row to the view. A settled operation's redirect URL is
// of no more use, so it is not shown.
func operationOf(r db.ConnectionOperation) Operation {
	o := Operation{
		ID: r.ID, WorkspaceID: r.WorkspaceID, ConnectionID: r.ConnectionID, Status: Status(r.Status),
		RedirectURL: r.RedirectUrl, Error: r.Error, Owner: r.Owner, Deadline: r.Deadline.UTC(), Version: r.Version,
		CreatedByID: r.CreatedByID, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}
	if r.SettledAt != nil {
		t := r.SettledAt.UTC()
		o.SettledAt, o.RedirectURL = &t, nil
	}
	return o
}

// GetOperation reads an authorization operation of the caller's workspace. It
// needs the write permission, like starting one: a pending operation's
// redirect URL lets whoever follows it connect their own account.
func (s *Service) GetOperation(ctx context.Context, c *auth.Caller, operationID string) (Operation, error) {
	if err := auth.Require(c, auth.PermWrite); err != nil {
		return Operation{}, err
	}
	row, err := s.q.ConnectionOperationGet(ctx, s.pool, db.ConnectionOperationGetParams{WorkspaceID: c.WorkspaceID, ID: operationID})
	if err != nil {
		return Operation{}, dbx.Translate(err, "connection operation")
	}
	return operationOf(row), nil
}

// started is what the first transaction of Authorize hands to the vendor call.
type started struct {
	op      db.ConnectionOperation
	vendor  Authorizer
	request Request
}

// Authorize starts an authorization of a connection of the caller's
// workspace: it records a pending operation owned by this process, with a
// deadline, then asks the vendor to begin (outside any transaction) and
// records where the user goes. A pending operation of the same connection is
// superseded (failed). The connection and its provider must be enabled (409
// disabled). A vendor that refuses or cannot be reached fails the operation,
// which is returned with its error; the connection is untouched until the
// vendor reports the account connected.
func (s *Service) Authorize(ctx context.Context, c *auth.Caller, connectionID string) (Operation, error) {
	if err := auth.Require(c, auth.PermWrite); err != nil {
		return Operation{}, err
	}
	st, err := dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (started, error) {
		return s.startTx(ctx, tx, c, connectionID)
	})
	if err != nil {
		return Operation{}, err
	}
	callCtx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	p, err := st.vendor.Begin(callCtx, st.request)
	cancel()
	if err != nil {
		var ve *VendorError
		if !errors.As(err, &ve) {
			return Operation{}, err
		}
		p = Progress{Status: StatusFailed, Message: ve.Msg}
	}
	// The outcome is recorded even if the client went away meanwhile.
	ctx = context.WithoutCancel(ctx)
	if err := s.advance(ctx, st.op, p); err != nil {
		return Operation{}, err
	}
	row, err := s.q.ConnectionOperationGet(ctx, s.pool, db.ConnectionOperationGetParams{WorkspaceID: c.WorkspaceID, ID: st.op.ID})
	if err != nil {
		return Operation{}, dbx.Translate(err, "connection operation")
	}
	return operationOf(row), nil
}

// startTx checks the connection and its provider, supersedes a pending
// operation and inserts the new one. The connection is locked FOR NO KEY
// UPDATE, so two starts on one connection run one after the other and the
// later one supersedes the earlier (FOR SHARE would let both supersede the
// same old operation and then collide on the one-pending index).
func (s *Service) startTx(ctx context.Context, tx pgx.Tx, c *auth.Caller, connectionID string) (started, error) {
	conn, err := s.q.ConnectionGetForUpdate(ctx, tx, db.ConnectionGetForUpdateParams{WorkspaceID: c.WorkspaceID, ID: connectionID})
	if err != nil {
		return started{}, dbx.Translate(err, "connection")
	}
	if !conn.Enabled {
		return started{}, apperr.New(apperr.KindDisabled, "the connection is disabled; enable it to authorize it")
	}
	p, err := s.provider(ctx, tx, c.WorkspaceID, conn.ProviderID, "provider_id", true)
	if err != nil {
		return started{}, err
	}
	vendor, ok := s.vendors[p.typ.ID]
	if !ok {
		return started{}, apperr.New(apperr.KindConflict, fmt.Sprintf("connections of %s providers cannot be authorized by svc", p.typ.DisplayName))
	}
	req, err := s.request(p.typ.ID, p.row.ID, p.row.Config, p.row.Credential, conn.Config, conn.Account, conn.ID)
	if err != nil {
		return started{}, err
	}
	opID := id.New(id.ConnectionOperation)
	if err := s.failPending(ctx, tx, c.OrganizationID, c.PrincipalID, conn.ID, "superseded by authorization "+opID); err != nil {
		return started{}, err
	}
	op, err := s.q.ConnectionOperationInsert(ctx, tx, db.ConnectionOperationInsertParams{
		ID: opID, WorkspaceID: conn.WorkspaceID, ConnectionID: conn.ID, Owner: s.opts.Owner,
		LeaseSeconds: s.opts.OwnerLease.Seconds(), TtlSeconds: s.opts.AuthorizationTTL.Seconds(), CreatedByID: c.PrincipalID,
	})
	if err != nil {
		return started{}, err
	}
	if err := recordOperation(ctx, tx, c.OrganizationID, c.PrincipalID, "connection_operation.created", op, []string{"connection_id", "status"}); err != nil {
		return started{}, err
	}
	return started{op: op, vendor: vendor, request: req}, nil
}

// request builds a vendor request from stored rows: the provider's config
// with its type's defaults, its opened credential, and the connection's config
// and vendor user.
func (s *Service) request(typeID, providerID string, providerConfig []byte, providerCred []byte, connConfig []byte, account *string, connectionID string) (Request, error) {
	t, ok := s.reg.Lookup(typeID)
	if !ok {
		return Request{}, apperr.New(apperr.KindConflict, fmt.Sprintf("connector provider type %q is not installed", typeID))
	}
	pcfg := t.Config.Defaults()
	stored, err := decodeObject(providerConfig)
	if err != nil {
		return Request{}, fmt.Errorf("provider %s: stored config: %w", providerID, err)
	}
	maps.Copy(pcfg, stored)
	var cred map[string]any
	if err := secret.Open(s.ring, providerID, providerCred, &cred); err != nil {
		return Request{}, apperr.Wrap(apperr.KindConflict, "the provider's credential cannot be opened (its key is no longer in the key ring); set it again", err)
	}
	cfg, err := decodeObject(connConfig)
	if err != nil {
		return Request{}, fmt.Errorf("connection %s: stored config: %w", connectionID, err)
	}
	user := connectionID
	if account != nil {
		user = *account
	}
	return Request{ProviderConfig: pcfg, ProviderCredential: cred, Config: cfg, UserID: user}, nil
}

// advance records a vendor's progress on a pending operation: where the user
// goes and the vendor's state while pending, else its settlement. An
// operation settled meanwhile (superseded, revoked, expired) is left as it is.
func (s *Service) advance(ctx context.Context, op db.ConnectionOperation, p Progress) error {
	switch p.Status {
	case StatusPending:
		if op.VendorState != nil {
			return nil // already recorded; Check found nothing new
		}
		state, err := secret.Seal(s.ring, op.ID, p.VendorState)
		if err != nil {
			return err
		}
		redirect := p.RedirectURL
		_, err = s.q.ConnectionOperationBegun(ctx, s.pool, db.ConnectionOperationBegunParams{ID: op.ID, RedirectUrl: &redirect, VendorState: state})
		if dbx.IsNotFound(err) {
			return nil
		}
		return dbx.Translate(err, "connection operation")
	case StatusSucceeded:
		return s.succeed(ctx, op, p)
	default:
		return s.settle(ctx, op.ID, p.Status, p.Message)
	}
}

// settle marks a pending operation failed or expired with msg and records
// it; an operation settled already is left as it is.
func (s *Service) settle(ctx context.Context, operationID string, status Status, msg string) error {
	if msg == "" {
		msg = "the authorization did not complete"
	}
	return dbx.WithTx(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) error {
		row, err := s.q.ConnectionOperationSettle(ctx, tx, db.ConnectionOperationSettleParams{ID: operationID, Status: string(status), Error: &msg})
		if dbx.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return recordOperation(ctx, tx, "", "", "connection_operation."+string(status), row, []string{"error", "status"})
	})
}

// succeed gives the connection the credential (and account) the vendor
// reported and settles the operation, in one transaction. The connection is
// locked before the operation, as everywhere, and the operation is settled by
// a conditional update, so of two processes reporting the same success only
// one writes. The change is the operation starter's: it is recorded as theirs.
func (s *Service) succeed(ctx context.Context, op db.ConnectionOperation, p Progress) error {
	return dbx.WithTx(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) error {
		conn, err := s.q.ConnectionGetForUpdate(ctx, tx, db.ConnectionGetForUpdateParams{WorkspaceID: op.WorkspaceID, ID: op.ConnectionID})
		if err != nil {
			return dbx.Translate(err, "connection")
		}
		// fail settles the operation as failed instead, in this transaction:
		// these outcomes do not change by asking the vendor again.
		fail := func(reason string) error {
			row, err := s.q.ConnectionOperationSettle(ctx, tx, db.ConnectionOperationSettleParams{ID: op.ID, Status: string(StatusFailed), Error: &reason})
			if dbx.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			return recordOperation(ctx, tx, "", "", "connection_operation.failed", row, []string{"error", "status"})
		}
		if !conn.Enabled {
			return fail("the connection was disabled before the authorization completed")
		}
		prov, err := s.q.ConnectionProviderType(ctx, tx, conn.ProviderID)
		if err != nil {
			return dbx.Translate(err, "provider")
		}
		t, ok := s.reg.Lookup(prov)
		if !ok {
			return fail("connections of this provider type cannot be authorized by svc")
		}
		if err := t.ValidateConnectionCredential(p.Credential); err != nil {
			return fail("the vendor reported a connected account svc cannot use")
		}
		settled, err := s.q.ConnectionOperationSettle(ctx, tx, db.ConnectionOperationSettleParams{ID: op.ID, Status: string(StatusSucceeded)})
		if dbx.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		cred, err := secret.Seal(s.ring, conn.ID, p.Credential)
		if err != nil {
			return err
		}
		fields := []string{"credential"}
		account := conn.Account
		if account == nil && p.Account != "" && validateAccount(&p.Account) == nil {
			account, fields = &p.Account, append(fields, "account")
		}
		conn, err = s.q.ConnectionUpdate(ctx, tx, db.ConnectionUpdateParams{
			ID: conn.ID, Name: conn.Name, Config: conn.Config, Credential: cred, Account: account,
			Enabled: conn.Enabled, UpdatedByID: op.CreatedByID,
		})
		if err != nil {
			return err
		}
		if err := s.record(ctx, tx, "", op.CreatedByID, "connection.authorized", conn, sorted(fields)); err != nil {
			return err
		}
		return recordOperation(ctx, tx, "", "", "connection_operation.succeeded", settled, []string{"status"})
	})
}

// failPending fails the pending operation of a connection with reason and
// records it.
func (s *Service) failPending(ctx context.Context, tx pgx.Tx, organizationID, actorID, connectionID, reason string) error {
	rows, err := s.q.ConnectionOperationFailPending(ctx, tx, db.ConnectionOperationFailPendingParams{ConnectionID: connectionID, Error: &reason})
	if err != nil {
		return err
	}
	for _, r := range rows {
		if err := recordOperation(ctx, tx, organizationID, actorID, "connection_operation.failed", r, []string{"error", "status"}); err != nil {
			return err
		}
	}
	return nil
}

// recordOperation writes the audit event of a change to an operation; actorID
// is empty for the changes the service makes on its own (a vendor's answer, a
// sweep).
func recordOperation(ctx context.Context, tx pgx.Tx, organizationID, actorID, action string, row db.ConnectionOperation, fields []string) error {
	return audit.Record(ctx, tx, audit.Event{
		OrganizationID: organizationID, WorkspaceID: row.WorkspaceID, ActorID: actorID, Action: action,
		SubjectType: "connection_operation", SubjectID: row.ID, Version: &row.Version, ChangedFields: fields,
	})
}
