package identity

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/audit"
	"github.com/svcdev/svc/internal/dbx"
)

// ErrUserNotFound means no user account has the e-mail address given.
var ErrUserNotFound = errors.New("no user account has this e-mail address")

// UserState is a user account's disabled flag after an operator command.
type UserState struct {
	UserID   string `json:"user_id"`
	Email    string `json:"email"`
	Disabled bool   `json:"disabled"`
	// Changed is false when the account already was in the state asked for.
	Changed bool `json:"-"`
}

// SetUserDisabled disables (disabled = true) or enables the account with the
// e-mail address, found whatever its case. A disabled account's keys and sessions
// are refused; enabling it gives them back unchanged, grants included, because
// nothing but the flag changes. Setting the state the account already has
// changes nothing: no version, no audit event. The change is recorded in the
// audit trail of every workspace the user belongs to or holds keys in, with no
// actor (an operator did it).
func SetUserDisabled(ctx context.Context, pool *pgxpool.Pool, email string, disabled bool) (UserState, error) {
	email = strings.TrimSpace(email)
	if err := ValidateEmail(email); err != nil {
		return UserState{}, fmt.Errorf("%q is not a valid e-mail address", email)
	}
	q := db.New()
	return dbx.WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) (UserState, error) {
		u, err := q.UserGetByEmailForUpdate(ctx, tx, email)
		if dbx.IsNotFound(err) {
			return UserState{}, fmt.Errorf("%w: %s", ErrUserNotFound, email)
		}
		if err != nil {
			return UserState{}, err
		}
		st := UserState{UserID: u.ID, Email: u.Email, Disabled: u.DisabledAt != nil}
		if st.Disabled == disabled {
			return st, nil
		}
		u, err = q.UserSetDisabled(ctx, tx, db.UserSetDisabledParams{ID: u.ID, Disabled: disabled})
		if err != nil {
			return UserState{}, err
		}
		st.Disabled, st.Changed = u.DisabledAt != nil, true
		action := "user.enabled"
		if disabled {
			action = "user.disabled"
		}
		wss, err := q.WorkspaceListForPrincipal(ctx, tx, u.PrincipalID)
		if err != nil {
			return UserState{}, err
		}
		e := audit.Event{Action: action, SubjectType: "user", SubjectID: u.ID, Version: &u.Version, ChangedFields: []string{"disabled_at"}}
		if len(wss) == 0 {
			return st, audit.Record(ctx, tx, e)
		}
		for _, w := range wss {
			e.OrganizationID, e.WorkspaceID = w.OrganizationID, w.ID
			if err := audit.Record(ctx, tx, e); err != nil {
				return UserState{}, err
			}
		}
		return st, nil
	})
}
