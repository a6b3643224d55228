package session

import (
	"context"
	"slices"
	"strings"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/dbx"
)

// maxWorkspaces bounds the workspaces listed on the console's home page.
const maxWorkspaces = 500

// Organization is an organization a principal belongs to, directly or through
// one of its workspaces, and the workspaces it can act in there.
type Organization struct {
	ID   string
	Name string
	// Role is the principal's organization role, or "" when it belongs only to
	// some of the organization's workspaces.
	Role       string
	Workspaces []Workspace
}

// Workspace is a workspace a principal can act in.
type Workspace struct {
	ID   string
	Name string
	// Role is the principal's effective workspace role: its membership, raised
	// to admin for organization owners and admins.
	Role string
}

// Overview lists where a principal belongs, organizations by name, for the
// console's home page. Truncated reports that there were more than
// maxWorkspaces workspaces.
type Overview struct {
	Organizations []Organization
	Truncated     bool
}

// Overview returns the organizations and workspaces of a principal with its roles.
func (s *Service) Overview(ctx context.Context, principalID string) (Overview, error) {
	orgs, err := s.q.PrincipalOrganizationRoles(ctx, s.o.Pool, principalID)
	if err != nil {
		return Overview{}, dbx.Translate(err, "organization")
	}
	wss, err := s.q.PrincipalWorkspaceAccess(ctx, s.o.Pool, db.PrincipalWorkspaceAccessParams{PrincipalID: principalID, RowLimit: maxWorkspaces + 1})
	if err != nil {
		return Overview{}, dbx.Translate(err, "workspace")
	}
	out := Overview{Organizations: []Organization{}}
	index := map[string]int{}
	for _, o := range orgs {
		index[o.ID] = len(out.Organizations)
		out.Organizations = append(out.Organizations, Organization{ID: o.ID, Name: o.Name, Role: o.Role})
	}
	if len(wss) > maxWorkspaces {
		wss, out.Truncated = wss[:maxWorkspaces], true
	}
	for _, w := range wss {
		i, ok := index[w.OrganizationID]
		if !ok {
			// A workspace member who is not a member of its organization.
			i = len(out.Organizations)
			index[w.OrganizationID] = i
			out.Organizations = append(out.Organizations, Organization{ID: w.OrganizationID, Name: w.OrganizationName})
		}
		role := auth.EffectiveRole(auth.RoleAdmin, deref(w.WorkspaceRole), deref(w.OrganizationRole))
		out.Organizations[i].Workspaces = append(out.Organizations[i].Workspaces, Workspace{ID: w.ID, Name: w.Name, Role: role})
	}
	slices.SortStableFunc(out.Organizations, func(a, b Organization) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ErrNoWorkspace is the answer for a workspace the session's principal
// cannot act in, whether or not it exists.
var ErrNoWorkspace = apperr.New(apperr.KindNotFound, "workspace not found")

// Caller is the signed-in person acting in workspace workspaceID with their
// membership role (organization owners and admins act as admins), as an API
// key with the admin role of the same principal would: every service checks
// its permission against it exactly as it checks an API request's.
// ErrNoWorkspace when the principal cannot act there.
func (s *Service) Caller(ctx context.Context, sess Session, workspaceID string) (*auth.Caller, error) {
	w, err := s.q.PrincipalWorkspaceRole(ctx, s.o.Pool, db.PrincipalWorkspaceRoleParams{PrincipalID: sess.PrincipalID, WorkspaceID: workspaceID})
	if dbx.IsNotFound(err) {
		return nil, ErrNoWorkspace
	}
	if err != nil {
		return nil, dbx.Translate(err, "workspace")
	}
	role := auth.EffectiveRole(auth.RoleAdmin, deref(w.WorkspaceRole), deref(w.OrganizationRole))
	if role == "" {
		return nil, ErrNoWorkspace
	}
	return &auth.Caller{
		PrincipalID: sess.PrincipalID, PrincipalKind: "user", DisplayName: sess.DisplayName,
		UserID: sess.UserID, Email: sess.Email,
		OrganizationID: w.OrganizationID, OrganizationName: w.OrganizationName,
		WorkspaceID: w.ID, WorkspaceName: w.Name,
		Role: role, OrganizationRole: deref(w.OrganizationRole),
	}, nil
}
