package session

import (
	"context"
	"slices"
	"strings"

	"github.com/svcdev/svc/gen/db"
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
