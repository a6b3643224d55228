package identity

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/audit"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/id"
)

// ErrOrganizationExists means an organization of the same name (whatever its
// case) exists; creating another changed nothing.
var ErrOrganizationExists = errors.New("an organization of that name exists; nothing was changed")

// organizationLockID serializes operators' organization creations, so that
// two of the same name cannot both pass the name check.
const organizationLockID int64 = 0x7376635f6f726773 // "svc_orgs"

// OperatorName is the display name of the service principal that an
// organization made by an operator command records as the author of what the
// command made: its first workspace and, when its owner has no account yet,
// the owner's invitation.
const OperatorName = "svc operator"

// DefaultWorkspaceName names an organization's first workspace when the
// operator names none.
const DefaultWorkspaceName = "Default workspace"

// CreateOrganizationInput is an organization an operator creates, with its
// first workspace and its owner.
type CreateOrganizationInput struct {
	Name string
	// WorkspaceName names the first workspace; empty is DefaultWorkspaceName.
	WorkspaceName string
	OwnerEmail    string
}

// Validate checks the names and the owner's address.
func (in CreateOrganizationInput) Validate() error {
	if err := validateName("name", in.Name); err != nil {
		return err
	}
	if in.WorkspaceName != "" {
		if err := validateName("workspace_name", in.WorkspaceName); err != nil {
			return err
		}
	}
	if err := ValidateEmail(in.OwnerEmail); err != nil {
		return apperr.InvalidField("owner_email", "not a valid e-mail address")
	}
	return nil
}

// OwnerInvite is the invitation of an organization's first owner, who has no
// account yet.
type OwnerInvite struct {
	OrganizationID   string
	OrganizationName string
	// InviterID and InviterName are the operator's principal.
	InviterID   string
	InviterName string
	Email       string
}

// OwnerInvitation is an owner invitation as made.
type OwnerInvitation struct {
	ID        string    `json:"id"`
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expires_at"`
}

// InviteOwnerFunc invites in.Email to own the new organization, in tx (the
// organization's transaction), queueing the invitation mail with it
// (invitation.Service.InviteOwner).
type InviteOwnerFunc func(ctx context.Context, tx pgx.Tx, in OwnerInvite) (OwnerInvitation, error)

// Owner is the owner of a created organization: an account that is a member
// already (UserID set), or an address invited to become one.
type Owner struct {
	Email  string  `json:"email"`
	UserID *string `json:"user_id"`
	// Status is "member" or "invited".
	Status string `json:"status"`
	// Disabled reports a member whose account is disabled (svc user enable).
	Disabled bool `json:"disabled"`
}

// The owner statuses.
const (
	OwnerMember  = "member"
	OwnerInvited = "invited"
)

// CreatedOrganization is what creating an organization made.
type CreatedOrganization struct {
	OrganizationID string           `json:"organization_id"`
	Name           string           `json:"name"`
	WorkspaceID    string           `json:"workspace_id"`
	Owner          Owner            `json:"owner"`
	Invitation     *OwnerInvitation `json:"invitation"`
}

// CreateOrganization creates an organization, its first workspace and its
// owner, in one transaction, for an operator (no caller): the organization's
// own service principal (OperatorName) authors the workspace. An owner address
// with an account becomes the organization's owner and the workspace's admin
// at once; one without is invited to own the organization through invite,
// whose link makes the account when followed. It returns
// ErrOrganizationExists, changing nothing, when an organization of the same
// name exists.
func CreateOrganization(ctx context.Context, pool *pgxpool.Pool, in CreateOrganizationInput, invite InviteOwnerFunc) (CreatedOrganization, error) {
	in.Name, in.WorkspaceName, in.OwnerEmail = strings.TrimSpace(in.Name), strings.TrimSpace(in.WorkspaceName), strings.TrimSpace(in.OwnerEmail)
	if err := in.Validate(); err != nil {
		return CreatedOrganization{}, err
	}
	if in.WorkspaceName == "" {
		in.WorkspaceName = DefaultWorkspaceName
	}
	q := db.New()
	return dbx.WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) (CreatedOrganization, error) {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", organizationLockID); err != nil {
			return CreatedOrganization{}, err
		}
		exists, err := q.OrganizationNameExists(ctx, tx, in.Name)
		if err != nil {
			return CreatedOrganization{}, err
		}
		if exists {
			return CreatedOrganization{}, ErrOrganizationExists
		}
		org, err := q.OrganizationInsert(ctx, tx, db.OrganizationInsertParams{ID: id.New(id.Organization), Name: in.Name})
		if err != nil {
			return CreatedOrganization{}, err
		}
		op, err := q.PrincipalInsert(ctx, tx, db.PrincipalInsertParams{ID: id.New(id.Principal), Kind: "service", DisplayName: OperatorName})
		if err != nil {
			return CreatedOrganization{}, err
		}
		ws, err := q.WorkspaceInsert(ctx, tx, db.WorkspaceInsertParams{ID: id.New(id.Workspace), OrganizationID: org.ID, Name: in.WorkspaceName, CreatedByID: op.ID})
		if err != nil {
			return CreatedOrganization{}, err
		}
		events := []audit.Event{
			{OrganizationID: org.ID, ActorID: op.ID, Action: "organization.created", SubjectType: "organization", SubjectID: org.ID, Version: &org.Version},
			{OrganizationID: org.ID, WorkspaceID: ws.ID, ActorID: op.ID, Action: "workspace.created", SubjectType: "workspace", SubjectID: ws.ID, Version: &ws.Version},
		}
		out := CreatedOrganization{OrganizationID: org.ID, Name: org.Name, WorkspaceID: ws.ID, Owner: Owner{Email: in.OwnerEmail}}
		user, err := q.UserGetByEmail(ctx, tx, in.OwnerEmail)
		switch {
		case err == nil:
			om, err := q.OrganizationMemberInsert(ctx, tx, db.OrganizationMemberInsertParams{OrganizationID: org.ID, PrincipalID: user.PrincipalID, Role: auth.OrgOwner})
			if err != nil {
				return CreatedOrganization{}, err
			}
			wm, err := q.WorkspaceMemberInsert(ctx, tx, db.WorkspaceMemberInsertParams{WorkspaceID: ws.ID, PrincipalID: user.PrincipalID, Role: auth.RoleAdmin})
			if err != nil {
				return CreatedOrganization{}, err
			}
			events = append(events,
				audit.Event{OrganizationID: org.ID, ActorID: op.ID, Action: "organization_member.created", SubjectType: "organization_member", SubjectID: user.PrincipalID, Version: &om.Version},
				audit.Event{OrganizationID: org.ID, WorkspaceID: ws.ID, ActorID: op.ID, Action: "member.created", SubjectType: "member", SubjectID: user.PrincipalID, Version: &wm.Version},
			)
			out.Owner = Owner{Email: user.Email, UserID: &user.ID, Status: OwnerMember, Disabled: user.DisabledAt != nil}
		case dbx.IsNotFound(err):
			inv, err := invite(ctx, tx, OwnerInvite{
				OrganizationID: org.ID, OrganizationName: org.Name, InviterID: op.ID, InviterName: OperatorName, Email: in.OwnerEmail,
			})
			if err != nil {
				return CreatedOrganization{}, fmt.Errorf("invite the owner: %w", err)
			}
			out.Owner.Status, out.Invitation = OwnerInvited, &inv
		default:
			return CreatedOrganization{}, err
		}
		for _, e := range events {
			if err := audit.Record(ctx, tx, e); err != nil {
				return CreatedOrganization{}, fmt.Errorf("audit %s: %w", e.Action, err)
			}
		}
		return out, nil
	})
}

// OrganizationSummary is an organization as `svc organization list` shows it.
type OrganizationSummary struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	Workspaces int      `json:"workspaces"`
	Owners     []string `json:"owners"`
	// InvitedOwners are the addresses of pending, unexpired invitations to
	// own the organization.
	InvitedOwners []string  `json:"invited_owners"`
	CreatedAt     time.Time `json:"created_at"`
}

// ListOrganizations lists every organization, oldest first.
func ListOrganizations(ctx context.Context, pool *pgxpool.Pool) ([]OrganizationSummary, error) {
	rows, err := db.New().OrganizationListSummary(ctx, pool)
	if err != nil {
		return nil, err
	}
	out := make([]OrganizationSummary, 0, len(rows))
	for _, r := range rows {
		out = append(out, OrganizationSummary{
			ID: r.ID, Name: r.Name, Workspaces: int(r.Workspaces), Owners: nonNil(r.Owners), InvitedOwners: nonNil(r.InvitedOwners),
			CreatedAt: r.CreatedAt.UTC(),
		})
	}
	return out, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
