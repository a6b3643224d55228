-- Workspace memberships with the principal (and user, if any) they grant.

-- name: WorkspaceMemberList :many
SELECT wm.principal_id, wm.role, wm.version, wm.created_at, wm.updated_at,
       p.kind AS principal_kind, p.display_name, u.email
FROM workspace_member wm
JOIN principal p ON p.id = wm.principal_id
LEFT JOIN user_account u ON u.principal_id = wm.principal_id
WHERE wm.workspace_id = @workspace_id AND wm.principal_id < @after_id
ORDER BY wm.principal_id DESC
LIMIT @page_limit;

-- name: WorkspaceMemberGetForUpdate :one
SELECT wm.principal_id, wm.role, wm.version, wm.created_at, wm.updated_at,
       p.kind AS principal_kind, p.display_name, u.email
FROM workspace_member wm
JOIN principal p ON p.id = wm.principal_id
LEFT JOIN user_account u ON u.principal_id = wm.principal_id
WHERE wm.workspace_id = @workspace_id AND wm.principal_id = @principal_id
FOR UPDATE OF wm;

-- name: WorkspaceMemberUpdateRole :one
UPDATE workspace_member
SET role = @role, version = version + 1, updated_at = now()
WHERE workspace_id = @workspace_id AND principal_id = @principal_id
RETURNING *;

-- name: WorkspaceMemberDelete :exec
DELETE FROM workspace_member WHERE workspace_id = @workspace_id AND principal_id = @principal_id;

-- name: WorkspaceMemberCountAdmins :one
SELECT count(*)::int FROM workspace_member WHERE workspace_id = @workspace_id AND role = 'admin';

-- name: OrganizationMemberRoleGet :one
-- The principal's role in the organization, if it is a member of it.
SELECT role FROM organization_member
WHERE organization_id = @organization_id AND principal_id = @principal_id;
