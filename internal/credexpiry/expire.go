// Package credexpiry is the expire_credentials sweep: it deletes
// login sessions, mail links, invitation confirmation links and unaccepted
// invitations that can no longer be used, so that dead credentials do not accumulate.
package credexpiry

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/dbx"
)

// BatchSize is the most rows one transaction deletes. Each batch is its own
// short statement (an implicit transaction), so the sweep never holds many
// locks for long, and an interrupted pass loses nothing.
const BatchSize = 1000

// Result counts what one pass deleted.
type Result struct {
	LoginSessions int64
	MailLinks     int64
	// InvitationConfirmations are pending acceptances whose mailed link expired.
	InvitationConfirmations int64
	Invitations             int64
}

// Expire deletes, by the database's clock:
//   - login sessions that expired or were revoked;
//   - mail links that expired, were used or were revoked;
//   - invitation confirmation links that expired (a used one is deleted as it
//     is used);
//   - invitations never accepted that expired or were revoked.
//
// Accepted invitations and live credentials are never touched. Each kind is
// deleted in batches of BatchSize until a batch comes back short or ctx ends
// (River's queue cleaner). It returns what it deleted, also when it fails part
// way; the next pass continues where this one stopped.
func Expire(ctx context.Context, pool *pgxpool.Pool) (Result, error) {
	return expire(ctx, pool, BatchSize)
}

// expire is Expire with a batch size of the caller's choosing, for tests.
func expire(ctx context.Context, pool *pgxpool.Pool, batch int32) (Result, error) {
	q := db.New()
	var res Result
	steps := []struct {
		what  string
		count *int64
		del   func(context.Context, db.DBTX, int32) (int64, error)
	}{
		{"login sessions", &res.LoginSessions, q.LoginSessionDeleteExpired},
		{"mail links", &res.MailLinks, q.MailLinkDeleteSpent},
		{"invitation confirmations", &res.InvitationConfirmations, q.InvitationConfirmationDeleteExpired},
		{"invitations", &res.Invitations, q.InvitationDeleteLapsed},
	}
	for _, s := range steps {
		if err := drain(ctx, pool, batch, s.count, s.del); err != nil {
			return res, fmt.Errorf("expire %s: %w", s.what, err)
		}
	}
	return res, nil
}

// drain runs del until it deletes fewer than batch rows, adding to count.
func drain(ctx context.Context, pool *pgxpool.Pool, batch int32, count *int64, del func(context.Context, db.DBTX, int32) (int64, error)) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := del(ctx, pool, batch)
		if err != nil {
			return dbx.Translate(err, "")
		}
		*count += n
		if n < int64(batch) {
			return nil
		}
	}
}
