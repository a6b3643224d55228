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
	// ErrPasswordRequired: accepting needs a password: the account's own when
	// the address has one, a new one otherwise. The answer is the same either
	// way, so it does not tell whether the address has an account.
	ErrPasswordRequired = apperr.InvalidField("password", "required: the password of your account with this address, or a new one if you have none")
	// ErrWrongPassword: the address has an account and this is not its
	// password. Accept does not return it (it mails the account and answers as
	// for a new address); it marks the case inside the package.
	ErrWrongPassword = apperr.InvalidField("password", "is not the password of the account with this address")
)

// errAlreadyMember reports an invitee who already belongs to the target.
func errAlreadyMember(target string) error {
	return apperr.New(apperr.KindAlreadyExists, "this address is already a member of the "+target)
}
