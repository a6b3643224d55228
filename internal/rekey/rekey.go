// Package rekey re-seals the secrets stored in the database under the key
// ring's current primary key, the last step of a key rotation (see the
// package documentation of internal/keyring and docs/operations.md).
//
// This is operator tooling run by `svc keyring reseal`, not a request path, so
// its SQL is written here as plain pgx queries rather than sqlc queries: it
// walks a fixed list of sealed columns with the same three statements.
package rekey

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/internal/keyring"
)

// DefaultBatch is the number of rows re-sealed per transaction by default.
const DefaultBatch = 500

// Column names of Result.Resealed, one per sealed column.
const (
	ProviderCredential   = "provider_credential"
	ProviderExtraHeaders = "provider_extra_headers"
	OutboxSealed         = "outbox_sealed"
	IdempotencyResponse  = "idempotency_response"
	ConnectionCredential = "connection_credential"
	OperationVendorState = "connection_operation_vendor_state"
	SubscriptionSecret   = "subscription_secret"
)

// column is one sealed column and how to find the additional data each of
// its values was sealed with.
type column struct {
	name  string // key of Result.Resealed
	table string
	col   string
	// extra is a further column selected for aad (or "NULL").
	extra string
	// aad returns the additional data of the row id whose extra column holds
	// extra, or an error when it cannot be derived.
	aad func(id string, extra []byte) ([]byte, error)
}

func idAAD(id string, _ []byte) ([]byte, error) { return []byte(id), nil }

// outboxAAD derives the additional data of an outbox delivery's sealed
// secrets from its payload. Only identity_mail deliveries carry sealed
// secrets today: an invitation mail is sealed under "identity_mail:" plus the
// invitation id (internal/invitation MailAAD), a password-reset mail under
// "identity_mail:" plus the mail link id (internal/session MailAAD); the
// payload names that id. The two mails of an invitation acceptance waiting
// for the address's owner (templates invitation_confirmation and
// invitation_attempt) are sealed under "identity_mail:invitation_confirmation:"
// plus the payload's mail_id (internal/invitation ConfirmationMailAAD).
func outboxAAD(_ string, extra []byte) ([]byte, error) {
	var row struct {
		Kind    string `json:"kind"`
		Payload struct {
			Template     string `json:"template"`
			InvitationID string `json:"invitation_id"`
			MailLinkID   string `json:"mail_link_id"`
			MailID       string `json:"mail_id"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(extra, &row); err != nil {
		return nil, fmt.Errorf("read the delivery's payload: %w", err)
	}
	if row.Kind != "identity_mail" {
		return nil, fmt.Errorf("no known sealing context for %s deliveries", row.Kind)
	}
	switch p := row.Payload; {
	case p.Template == "invitation_confirmation" || p.Template == "invitation_attempt":
		if p.MailID == "" {
			return nil, errors.New("the payload names no mail_id")
		}
		return []byte("identity_mail:invitation_confirmation:" + p.MailID), nil
	case p.InvitationID != "" && p.MailLinkID == "":
		return []byte("identity_mail:" + p.InvitationID), nil
	case p.MailLinkID != "" && p.InvitationID == "":
		return []byte("identity_mail:" + p.MailLinkID), nil
	}
	return nil, errors.New("the payload names neither exactly one invitation_id nor one mail_link_id")
}

// columns lists every sealed column of the schema. Table and column names are
// constants, never input, so formatting them into SQL is safe.
var columns = []column{
	{name: ProviderCredential, table: "provider", col: "credential", extra: "NULL::jsonb", aad: idAAD},
	{name: ProviderExtraHeaders, table: "provider", col: "extra_headers", extra: "NULL::jsonb", aad: idAAD},
	{name: OutboxSealed, table: "outbox", col: "sealed", extra: "jsonb_build_object('kind', kind, 'payload', payload)", aad: outboxAAD},
	{name: IdempotencyResponse, table: "idempotency_key", col: "response", extra: "NULL::jsonb", aad: idAAD},
	{name: ConnectionCredential, table: "connection", col: "credential", extra: "NULL::jsonb", aad: idAAD},
	{name: OperationVendorState, table: "connection_operation", col: "vendor_state", extra: "NULL::jsonb", aad: idAAD},
	{name: SubscriptionSecret, table: "subscription", col: "secret", extra: "NULL::jsonb", aad: idAAD},
}

// Unreadable is a stored value that could not be re-sealed: its key is not in
// the ring, it does not open with its context, or its context is unknown. It
// is left exactly as it is.
type Unreadable struct {
	Column string `json:"column"`
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// Result counts what a run re-sealed, per column, and lists what it could not.
type Result struct {
	Resealed   map[string]int `json:"resealed"`
	Unreadable []Unreadable   `json:"-"`
}

// Run re-seals, under ring's primary key, every sealed value in the database
// that is sealed under another key. It works in transactions of at most batch
// rows: each row is read again under a row lock, opened with its own
// additional data, sealed under the primary with the same additional data, and
// written only if the stored value is still the one read. A value that does not
// open is never touched: it is listed in Result.Unreadable. Values already
// under the primary are not read, so a second run does nothing.
func Run(ctx context.Context, pool *pgxpool.Pool, ring *keyring.Ring, batch int) (Result, error) {
	if batch <= 0 {
		batch = DefaultBatch
	}
	res := Result{Resealed: make(map[string]int, len(columns))}
	for _, c := range columns {
		n, bad, err := runColumn(ctx, pool, ring, c, batch)
		res.Resealed[c.name] = n
		res.Unreadable = append(res.Unreadable, bad...)
		if err != nil {
			return res, fmt.Errorf("re-seal %s.%s: %w", c.table, c.col, err)
		}
	}
	return res, nil
}

// primaryHeader is the prefix of every value sealed under the primary: the
// format version, the key id length and the key id (see internal/keyring).
func primaryHeader(ring *keyring.Ring) []byte {
	id := ring.PrimaryID()
	return append([]byte{1, byte(len(id))}, id...)
}

func runColumn(ctx context.Context, pool *pgxpool.Pool, ring *keyring.Ring, c column, batch int) (int, []Unreadable, error) {
	hdr := primaryHeader(ring)
	// Keyset order by id: rows left as they are (unreadable ones) are passed,
	// not read again. The lock is FOR NO KEY UPDATE, the one the UPDATE takes
	// anyway, so inserts referencing the row (a provider's users) are not held up.
	sel := fmt.Sprintf(`SELECT id, %[2]s, %[3]s FROM %[1]s
WHERE id > $1 AND %[2]s IS NOT NULL AND substring(%[2]s FROM 1 FOR $2::int) IS DISTINCT FROM $3::bytea
ORDER BY id LIMIT $4 FOR NO KEY UPDATE`, c.table, c.col, c.extra)
	upd := fmt.Sprintf(`UPDATE %[1]s SET %[2]s = $2 WHERE id = $1 AND %[2]s = $3`, c.table, c.col)

	var (
		after   string
		total   int
		unreads []Unreadable
	)
	for {
		var (
			done      bool
			n         int
			bad       []Unreadable
			nextAfter = after
		)
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			type row struct {
				id     string
				sealed []byte
				extra  []byte
			}
			rows, err := tx.Query(ctx, sel, after, len(hdr), hdr, batch)
			if err != nil {
				return err
			}
			got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
				var x row
				return x, r.Scan(&x.id, &x.sealed, &x.extra)
			})
			if err != nil {
				return err
			}
			done = len(got) < batch
			n, bad = 0, nil
			for _, r := range got {
				aad, err := c.aad(r.id, r.extra)
				if err != nil {
					bad = append(bad, Unreadable{Column: c.name, ID: r.id, Reason: err.Error()})
					continue
				}
				plain, err := ring.Open(r.sealed, aad)
				if err != nil {
					bad = append(bad, Unreadable{Column: c.name, ID: r.id, Reason: err.Error()})
					continue
				}
				fresh, err := ring.Seal(plain, aad)
				clear(plain)
				if err != nil {
					return err
				}
				tag, err := tx.Exec(ctx, upd, r.id, fresh, r.sealed)
				if err != nil {
					return err
				}
				n += int(tag.RowsAffected())
			}
			if len(got) > 0 {
				nextAfter = got[len(got)-1].id
			}
			return nil
		})
		if err != nil {
			return total, unreads, err
		}
		// Counted only once the transaction committed.
		after, total, unreads = nextAfter, total+n, append(unreads, bad...)
		if done {
			return total, unreads, nil
		}
	}
}
