-- Workspaces of an organization. Every query names the organization, so an id of
-- another organization is a miss (404), exactly like an absent one.

-- name: WorkspaceGetInOrganization :one
SELECT * FROM workspace WHERE organization_id = @organization_id AND id = @id;

-- name: WorkspaceGetForUpdate :one
-- NO KEY UPDATE: it serializes writers of the row without blocking the inserts
-- of rows that reference the workspace (keys, members), which take KEY SHARE.
SELECT * FROM workspace WHERE organization_id = @organization_id AND id = @id
FOR NO KEY UPDATE;

-- name: WorkspaceListByOrganization :many
SELECT * FROM workspace
WHERE organization_id = @organization_id AND id < @after_id
ORDER BY id DESC
LIMIT @page_limit;

-- name: WorkspaceUpdate :one
UPDATE workspace
SET name = @name, updated_by_id = @updated_by_id, version = version + 1, updated_at = now()
WHERE id = @id
RETURNING *;

-- name: WorkspaceLockMembership :one
-- Serializes the membership changes of one workspace, so two admins demoting each
-- other at once cannot leave it without an admin.
SELECT id FROM workspace WHERE id = @id FOR NO KEY UPDATE;

-- name: WorkspaceListForPrincipal :many
-- The workspaces a principal belongs to or holds keys in, for audit events that
-- concern the principal itself (an operator disabling its user).
SELECT w.id, w.organization_id FROM workspace w
WHERE w.id IN (SELECT wm.workspace_id FROM workspace_member wm WHERE wm.principal_id = @principal_id
               UNION
               SELECT k.workspace_id FROM api_key k WHERE k.principal_id = @principal_id)
ORDER BY w.id;
