package invitation

import (
	"errors"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/identity"
	"github.com/svcdev/svc/internal/password"
)

// Target names what an invitation is to, as the request's path does: a workspace
// (WorkspaceID) or an organization (OrganizationID). Exactly one is set.
type Target struct {
	WorkspaceID    string
	OrganizationID string
}

func (t Target) validate() error {
	if (t.WorkspaceID == "") == (t.OrganizationID == "") {
		return errors.New("invitation: exactly one of WorkspaceID and OrganizationID must be set")
	}
	return nil
}

// kind is "workspace" or "organization", as used in messages.
func (t Target) kind() string {
	if t.WorkspaceID != "" {
		return "workspace"
	}
	return "organization"
}

// roles returns the roles an invitation to t may grant.
func (t Target) roles() []string {
	if t.WorkspaceID != "" {
		return auth.WorkspaceRoles
	}
	return auth.OrganizationRoles
}

// CreateInput is a new invitation from the authenticated Caller.
type CreateInput struct {
	Caller *auth.Caller
	Target Target
	Email  string
	Role   string
}

// Validate checks the address and that the role fits the target.
func (in CreateInput) Validate() error {
	if in.Caller == nil {
		return errors.New("invitation: create needs a caller")
	}
	if err := in.Target.validate(); err != nil {
		return err
	}
	if err := identity.ValidateEmail(in.Email); err != nil {
		return err
	}
	if roles := in.Target.roles(); !slices.Contains(roles, in.Role) {
		return apperr.InvalidField("role", "must be one of "+strings.Join(roles, ", ")+" for "+in.Target.kind()+" invitations")
	}
	return nil
}

// ListInput asks for a page of a target's invitations, newest first.
type ListInput struct {
	Caller *auth.Caller
	Target Target
	Limit  *int
	Cursor *string
}

// Validate checks the input's shape; the cursor is checked when decoded.
func (in ListInput) Validate() error {
	if in.Caller == nil {
		return errors.New("invitation: list needs a caller")
	}
	return in.Target.validate()
}

// GetInput reads one invitation.
type GetInput struct {
	Caller *auth.Caller
	ID     string
}

// Validate checks the input's shape.
func (in GetInput) Validate() error {
	if in.Caller == nil {
		return errors.New("invitation: get needs a caller")
	}
	return nil
}

// RevokeInput revokes a pending invitation; IfMatch is the request's If-Match.
type RevokeInput struct {
	Caller  *auth.Caller
	ID      string
	IfMatch *string
}

// Validate checks the input's shape.
func (in RevokeInput) Validate() error {
	if in.Caller == nil {
		return errors.New("invitation: revoke needs a caller")
	}
	return nil
}

// AcceptInput accepts an invitation by its token. Password is the account's
// own when the address has one, else the new account's; DisplayName names a
// new account (an existing one keeps its name). ClientAddr is the client's
// address as rate limits count it ("" counts only per invitation).
type AcceptInput struct {
	Token       string
	Password    string
	DisplayName string
	ClientAddr  string
}

// maxNameRunes bounds display names (1 to 200 characters).
const maxNameRunes = 200

// Validate checks the token's presence and the optional fields' shape. Whether
// a password is needed is known only once the invitation is found.
func (in AcceptInput) Validate() error {
	if in.Token == "" {
		return apperr.InvalidField("token", "required")
	}
	if in.Password != "" {
		if err := password.Validate(in.Password); err != nil {
			return apperr.InvalidField("password", err.Error())
		}
	}
	if in.DisplayName != "" {
		if !utf8.ValidString(in.DisplayName) || utf8.RuneCountInString(in.DisplayName) > maxNameRunes {
			return apperr.InvalidField("display_name", "must be 1 to 200 characters")
		}
		for _, r := range in.DisplayName {
			if r < 0x20 || r == 0x7f {
				return apperr.InvalidField("display_name", "must not contain control characters")
			}
		}
	}
	return nil
}
