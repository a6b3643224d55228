package invitation

import "github.com/svcdev/svc/internal/apperr"

// Errors of the invitation operations. They are apperr values, so the HTTP layer
// maps them without knowing this package; the console can tell them apart with
// errors.Is.
var (
	// ErrNotFound: no invitation with that id or token that the caller may see.
	ErrNotFound = apperr.NotFound("invitation")
	// ErrAccepted: the invitation was accepted already; its token is spent.
	ErrAccepted = apperr.New(apperr.KindConflict, "the invitation was already accepted")
	// ErrRevoked: an administrator revoked the invitation.
	ErrRevoked = apperr.New(apperr.KindConflict, "the invitation was revoked")
	// ErrExpired: the invitation is past its expiry; ask for a new one.
	ErrExpired = apperr.New(apperr.KindConflict, "the invitation has expired")
	// ErrPending: the address already has a pending invitation to the same target.
	ErrPending = apperr.New(apperr.KindAlreadyExists, "a pending invitation for this address already exists")
	// ErrAccountDisabled: the invitee's account is disabled by an operator.
	ErrAccountDisabled = apperr.New(apperr.KindConflict, "the account for this address is disabled")
	// ErrPasswordRequired: accepting needs a password: a new one when the address
	// has no account (accepting creates it), the account's own otherwise.
	ErrPasswordRequired = apperr.InvalidField("password", "required: the password of your account, or a new one when the address has no account yet")
	// ErrWrongPassword: the address has an account and this is not its password.
	// Without this proof, whoever holds the token (the inviter included) could
	// attach someone else's account to their organization.
	ErrWrongPassword = apperr.InvalidField("password", "does not match the password of the account with this address")
)

// errAlreadyMember reports an invitee who already belongs to the target.
func errAlreadyMember(target string) error {
	return apperr.New(apperr.KindAlreadyExists, "this address is already a member of the "+target)
}
