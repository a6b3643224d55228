package testfactory

import (
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/invitation"
	"github.com/svcdev/svc/internal/keyring"
)

// ConfirmationMail is an identity_mail delivery of an invitation acceptance
// that waits for the address's owner, opened as the mail sender would.
type ConfirmationMail struct {
	Payload invitation.ConfirmationMailPayload
	Link    string
}

// ConfirmationMails returns the queued confirmation and attempt mails to
// email, oldest first, their sealed links opened with kr.
func ConfirmationMails(t testing.TB, pool *pgxpool.Pool, kr *keyring.Ring, email string) []ConfirmationMail {
	t.Helper()
	rows, err := pool.Query(t.Context(), `SELECT payload, sealed FROM outbox
		WHERE kind = 'identity_mail' AND payload->>'template' IN ('invitation_confirmation', 'invitation_attempt')
		  AND payload->>'to' = $1 ORDER BY id`, email)
	require.NoError(t, err)
	defer rows.Close()
	var out []ConfirmationMail
	for rows.Next() {
		var payload, sealed []byte
		require.NoError(t, rows.Scan(&payload, &sealed))
		var m ConfirmationMail
		require.NoError(t, json.Unmarshal(payload, &m.Payload))
		plain, err := kr.Open(sealed, invitation.ConfirmationMailAAD(m.Payload.MailID))
		require.NoError(t, err)
		var s invitation.ConfirmationMailSecrets
		require.NoError(t, json.Unmarshal(plain, &s))
		m.Link = s.Link
		out = append(out, m)
	}
	require.NoError(t, rows.Err())
	return out
}
