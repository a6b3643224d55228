package console

import (
	"net/http"
	"strings"
	"time"

	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/identity"
	"github.com/svcdev/svc/internal/invitation"
	"github.com/svcdev/svc/internal/resource"
)

// memberRoutes are the Members section: every member sees who is in the
// workspace with which role; admins change roles, remove members, and invite
// people by mail and revoke pending invitations.
func (c *Console) memberRoutes() []route {
	return []route{
		{Method: http.MethodGet, Path: "/members", Twin: "listMembers", Handle: c.members},
		{Method: http.MethodPost, Path: "/members/:member", Twin: "updateMember", Handle: c.updateMember},
		{Method: http.MethodPost, Path: "/members/:member/remove", Twin: "removeMember", Handle: c.removeMember},
		{Method: http.MethodGet, Path: "/members/invitations", Twin: "listWorkspaceInvitations", Handle: c.invitationsPage},
		{Method: http.MethodPost, Path: "/members/invitations", Twin: "createWorkspaceInvitation", Handle: c.invite},
		{Method: http.MethodPost, Path: "/members/invitations/:invitation/revoke", Twin: "revokeInvitation", Handle: c.revokeInvitation},
	}
}

// membersPage is what the members list shows.
type membersPage struct {
	Members []identity.Member
	Next    string
	Roles   []string
	// Self is the person's own principal.
	Self string
}

func (c *Console) membersView(r *wsRequest, v view) (view, error) {
	page, err := c.svc.Identity.ListMembers(r.ctx(), r.caller, identity.PageInput{Cursor: r.cursor()})
	if err != nil {
		return v, err
	}
	v.Title = "Members"
	v.Data = &membersPage{Members: page.Items, Next: nextCursor(page.NextCursor), Roles: auth.WorkspaceRoles, Self: r.caller.PrincipalID}
	return v, nil
}

// members lists the workspace's members and their roles (GET).
func (c *Console) members(r *wsRequest) error {
	v, err := c.membersView(r, view{})
	if err != nil {
		return err
	}
	return c.renderIn(r, http.StatusOK, "members", "members", v)
}

// membersRefused renders the members list with what the service refused.
func (c *Console) membersRefused(r *wsRequest, err error) error {
	v := view{}
	status, ok := formError(&v, err)
	if !ok {
		return err
	}
	v, lerr := c.membersView(r, v)
	if lerr != nil {
		return lerr
	}
	return c.renderIn(r, status, "members", "members", v)
}

// updateMember changes a member's role (POST, with the ETag the list showed).
func (c *Console) updateMember(r *wsRequest) error {
	etag := r.form.Get("etag")
	m, err := c.svc.Identity.UpdateMember(r.ctx(), r.caller, identity.UpdateMemberInput{
		PrincipalID: r.ec.Param("member"), Role: r.form.Get("role"), IfMatch: &etag,
	})
	if err != nil {
		return c.membersRefused(r, err)
	}
	return r.redirect(r.path("members"), m.DisplayName+" is "+m.Role+" of this workspace.")
}

// removeMember removes a member; their keys of the workspace stop working
// at once (POST, with the ETag the list showed).
func (c *Console) removeMember(r *wsRequest) error {
	etag := r.form.Get("etag")
	err := c.svc.Identity.RemoveMember(r.ctx(), r.caller, identity.RemoveMemberInput{PrincipalID: r.ec.Param("member"), IfMatch: &etag})
	if err != nil {
		return c.membersRefused(r, err)
	}
	return r.redirect(r.path("members"), "The member is removed: their API keys of this workspace are revoked.")
}

// invitationsPage is what the invitations page shows.
type invitationsPage struct {
	Invitations []invitationRow
	Next        string
	Roles       []string
	// Created is the invitation just made, with its URL, shown once.
	Created *invitation.Created
}

// invitationRow is an invitation with its state as of the page.
type invitationRow struct {
	invitation.Invitation
	// State is pending, accepted, revoked or expired.
	State string
}

// ETag is the invitation's entity tag.
func (i invitationRow) ETag() string { return resource.ETag(i.ID, i.Version) }

func invitationState(inv invitation.Invitation, now time.Time) string {
	switch {
	case inv.AcceptedAt != nil:
		return "accepted"
	case inv.RevokedAt != nil:
		return "revoked"
	case !inv.ExpiresAt.After(now):
		return "expired"
	}
	return "pending"
}

func (c *Console) invitationsView(r *wsRequest, v view) (view, error) {
	page, err := c.invitations.List(r.ctx(), invitation.ListInput{
		Caller: r.caller, Target: invitation.Target{WorkspaceID: r.caller.WorkspaceID}, Cursor: r.cursor(),
	})
	if err != nil {
		return v, err
	}
	d, _ := v.Data.(*invitationsPage)
	if d == nil {
		d = &invitationsPage{}
	}
	now := time.Now()
	d.Invitations = d.Invitations[:0]
	for _, inv := range page.Items {
		d.Invitations = append(d.Invitations, invitationRow{Invitation: inv, State: invitationState(inv, now)})
	}
	d.Next, d.Roles = nextCursor(page.NextCursor), auth.WorkspaceRoles
	v.Data = d
	v.Title = "Invitations"
	return v, nil
}

// invitationsPage lists the workspace's invitations, with the form to
// invite someone (GET, admins).
func (c *Console) invitationsPage(r *wsRequest) error {
	v, err := c.invitationsView(r, view{Form: map[string]string{"role": auth.RoleViewer}})
	if err != nil {
		return err
	}
	return c.renderIn(r, http.StatusOK, "invitations", "members", v)
}

// invite invites an address with a role; the mail with the invitation's
// link is queued. The link, which carries the token, is shown once in the
// answer to this POST, as the API answers it to the inviter.
func (c *Console) invite(r *wsRequest) error {
	form := map[string]string{"email": strings.TrimSpace(r.form.Get("email")), "role": r.form.Get("role")}
	created, err := c.invitations.Create(r.ctx(), invitation.CreateInput{
		Caller: r.caller, Target: invitation.Target{WorkspaceID: r.caller.WorkspaceID}, Email: form["email"], Role: form["role"],
	})
	v := view{Form: form}
	status := http.StatusOK
	if err != nil {
		var ok bool
		if status, ok = formError(&v, err); !ok {
			return err
		}
	} else {
		v = view{Form: map[string]string{"role": auth.RoleViewer}, Data: &invitationsPage{Created: &created}}
		v.Notice = "The invitation mail to " + created.Invitation.Email + " is on its way."
	}
	v, lerr := c.invitationsView(r, v)
	if lerr != nil {
		return lerr
	}
	return c.renderIn(r, status, "invitations", "members", v)
}

// revokeInvitation revokes a pending invitation: its link stops working
// (POST, with the ETag the list showed).
func (c *Console) revokeInvitation(r *wsRequest) error {
	etag := r.form.Get("etag")
	inv, err := c.invitations.Revoke(r.ctx(), invitation.RevokeInput{Caller: r.caller, ID: r.ec.Param("invitation"), IfMatch: &etag})
	if err != nil {
		v := view{Form: map[string]string{"role": auth.RoleViewer}}
		status, ok := formError(&v, err)
		if !ok {
			return err
		}
		v, lerr := c.invitationsView(r, v)
		if lerr != nil {
			return lerr
		}
		return c.renderIn(r, status, "invitations", "members", v)
	}
	return r.redirect(r.path("members", "invitations"), "The invitation to "+inv.Email+" is revoked: its link no longer works.")
}
