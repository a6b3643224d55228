package connection

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/secret"
)

// How authorization operations are driven, and recovered when their driver
// dies.
//
// The process that starts an operation owns it (owner = its replica id). Every
// DriveInterval its driver renews the lease of each pending operation it owns
// that is within its deadline (lease_until = now() + OwnerLease: the owner's
// heartbeat), asks the vendor how each is going, and settles the ones the
// vendor has settled; past its deadline, it expires its own operations.
//
// An owner has disappeared when its lease has lapsed (lease_until <= now(), by
// the database's clock): it missed OwnerLease / DriveInterval heartbeats. The
// recover_connection_operations sweep (Recover) then expires the operations of
// disappeared owners that are past their deadline, and takes over those still
// within it, so the user who completes the consent after a crash still gets a
// connected account. Every settlement is a conditional update of a pending row
// (and the sweep's batches skip rows locked by another pass), so an operation
// is settled exactly once however many drivers and sweeps race for it.

// recoverBatch is the most operations one recovery transaction settles.
const recoverBatch = 100

// RunDriver drives this process's operations every DriveInterval until ctx
// ends. A failed pass is logged and the next one retries; it returns only when
// ctx ends.
func (s *Service) RunDriver(ctx context.Context) error {
	t := time.NewTicker(s.opts.DriveInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := s.Drive(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("driving connection authorizations failed; retrying next interval", "error", err.Error())
		}
	}
}

// Drive is one pass of this process's driver: it expires its own operations
// past their deadline, renews its lease on the others and asks their vendors
// how they are going.
func (s *Service) Drive(ctx context.Context) error {
	if _, err := s.expireDue(ctx, false); err != nil {
		return err
	}
	ids, err := s.q.ConnectionOperationRenew(ctx, s.pool, db.ConnectionOperationRenewParams{Owner: s.opts.Owner, LeaseSeconds: s.opts.OwnerLease.Seconds()})
	if err != nil {
		return dbx.Translate(err, "connection operation")
	}
	var errs []error
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.driveOne(ctx, id); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// driveOne asks the vendor about one pending operation and records the
// answer. A transient vendor failure leaves it pending for the next pass.
func (s *Service) driveOne(ctx context.Context, operationID string) error {
	t, err := s.q.ConnectionOperationTarget(ctx, s.pool, operationID)
	if dbx.IsNotFound(err) {
		return nil // settled meanwhile
	}
	if err != nil {
		return dbx.Translate(err, "connection operation")
	}
	if t.VendorState == nil {
		// Begin has not been recorded: it is still running, or its process
		// died during it. Nothing to ask; the deadline ends it if need be.
		return nil
	}
	op := db.ConnectionOperation{ID: t.ID, WorkspaceID: t.WorkspaceID, ConnectionID: t.ConnectionID, VendorState: t.VendorState, CreatedByID: t.CreatedByID}
	if !t.ProviderEnabled {
		return s.settle(ctx, op.ID, StatusFailed, "the connector provider was disabled before the authorization completed")
	}
	vendor, ok := s.vendors[t.ProviderType]
	if !ok {
		return s.settle(ctx, op.ID, StatusFailed, "connections of this provider type cannot be authorized by svc")
	}
	req, err := s.request(t.ProviderType, t.ProviderID, t.ProviderConfig, t.ProviderCredential, t.ConnectionConfig, t.Account, t.ConnectionID)
	if err != nil {
		if e, ok := apperr.As(err); ok {
			return s.settle(ctx, op.ID, StatusFailed, e.Msg)
		}
		return err
	}
	var state map[string]any
	if err := secret.Open(s.ring, op.ID, t.VendorState, &state); err != nil {
		return s.settle(ctx, op.ID, StatusFailed, "the authorization's stored state cannot be opened (its key is no longer in the key ring)")
	}
	callCtx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	p, err := vendor.Check(callCtx, req, state)
	cancel()
	if err != nil {
		var ve *VendorError
		switch {
		case !errors.As(err, &ve):
			return err
		case ve.Transient:
			s.log.Info("connection authorization check failed; retrying", "operation_id", op.ID, "reason", ve.Msg)
			return nil
		}
		return s.settle(ctx, op.ID, StatusFailed, ve.Msg)
	}
	return s.advance(ctx, op, p)
}

// RecoverResult counts what one recovery pass did.
type RecoverResult struct {
	// Expired operations were past their deadline with their owner gone.
	Expired int
	// Adopted operations were within their deadline with their owner gone;
	// this process drives them now.
	Adopted int
}

// Recover is one pass of the recover_connection_operations sweep: it expires
// the pending operations past their deadline whose owner has disappeared (or
// is this process), recording each, and takes over the pending operations
// within their deadline whose owner has disappeared. Each batch is one short
// transaction; it returns what it did, also when it fails part way.
func (s *Service) Recover(ctx context.Context) (RecoverResult, error) {
	var res RecoverResult
	n, err := s.expireDue(ctx, true)
	res.Expired = n
	if err != nil {
		return res, err
	}
	for {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		ids, err := s.q.ConnectionOperationAdopt(ctx, s.pool, db.ConnectionOperationAdoptParams{
			Owner: s.opts.Owner, LeaseSeconds: s.opts.OwnerLease.Seconds(), Batch: recoverBatch,
		})
		if err != nil {
			return res, dbx.Translate(err, "connection operation")
		}
		res.Adopted += len(ids)
		if len(ids) < recoverBatch {
			return res, nil
		}
	}
}

// expireDue expires, batch by batch, the pending operations past their
// deadline that this process owns or, when abandoned, whose owner has
// disappeared, recording each in the batch's transaction.
func (s *Service) expireDue(ctx context.Context, abandoned bool) (int, error) {
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		n, err := dbx.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (int, error) {
			rows, err := s.q.ConnectionOperationExpireDue(ctx, tx, db.ConnectionOperationExpireDueParams{
				Owner: s.opts.Owner, Abandoned: abandoned, Batch: recoverBatch,
				Error: "the user did not complete the authorization before its deadline",
			})
			if err != nil {
				return 0, err
			}
			for _, r := range rows {
				if err := recordOperation(ctx, tx, "", "", "connection_operation.expired", r, []string{"error", "status"}); err != nil {
					return 0, err
				}
			}
			return len(rows), nil
		})
		total += n
		if err != nil || n < recoverBatch {
			return total, err
		}
	}
}
