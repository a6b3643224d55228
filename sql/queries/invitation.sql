-- Invitations to an organization (workspace_id NULL) or to one of its workspaces.
-- Only the SHA-256 of an invitation's token is stored. Expiry is judged by the
-- database clock.

-- name: InvitationInsert :one
-- expires_at is counted from the same now() as created_at.
INSERT INTO invitation (id, organization_id, workspace_id, email, role, principal_id, invited_by_id, token_hash, expires_at)
VALUES (@id, @organization_id, sqlc.narg('workspace_id'), @email, @role, sqlc.narg('principal_id'), @invited_by_id, @token_hash,
        now() + make_interval(secs => sqlc.arg('ttl_seconds')::double precision))
RETURNING *;

-- name: InvitationDeleteExpiredPending :execrows
-- Clears the way for a new invitation to the same address and target: an expired
-- pending invitation still holds invitation_pending_idx until the sweep deletes it.
DELETE FROM invitation
WHERE organization_id = @organization_id
  AND coalesce(workspace_id, '') = coalesce(sqlc.narg('workspace_id')::text, '')
  AND lower(email) = lower(@email)
  AND accepted_at IS NULL AND revoked_at IS NULL
  AND expires_at <= now();

-- name: InvitationInviteeGet :one
-- The account of an address, if any, and whether its principal is already a member
-- of the target: the workspace when workspace_id is set, else the organization.
SELECT u.principal_id,
       (CASE WHEN sqlc.narg('workspace_id')::text IS NULL
             THEN EXISTS (SELECT 1 FROM organization_member m
                          WHERE m.organization_id = @organization_id::text AND m.principal_id = u.principal_id)
             ELSE EXISTS (SELECT 1 FROM workspace_member m
                          WHERE m.workspace_id = sqlc.narg('workspace_id')::text AND m.principal_id = u.principal_id)
        END)::boolean AS is_member
FROM user_account u
WHERE lower(u.email) = lower(@email);

-- name: InvitationGetVisible :one
-- An invitation the caller may see: a workspace invitation of the caller's
-- workspace when the caller is its admin, or an organization invitation of the
-- caller's organization when the caller is its owner or admin. Anything else is
-- no row, exactly as for an absent id.
SELECT * FROM invitation
WHERE id = @id AND organization_id = @organization_id
  AND ((workspace_id = @workspace_id AND @workspace_admin::boolean)
       OR (workspace_id IS NULL AND @organization_admin::boolean));

-- name: InvitationGetVisibleForUpdate :one
SELECT * FROM invitation
WHERE id = @id AND organization_id = @organization_id
  AND ((workspace_id = @workspace_id AND @workspace_admin::boolean)
       OR (workspace_id IS NULL AND @organization_admin::boolean))
FOR UPDATE;

-- name: InvitationListByWorkspace :many
SELECT * FROM invitation
WHERE organization_id = @organization_id AND workspace_id = @workspace_id AND id < @after_id
ORDER BY id DESC
LIMIT @page_limit;

-- name: InvitationListByOrganization :many
-- Organization invitations only; workspace invitations are listed per workspace.
SELECT * FROM invitation
WHERE organization_id = @organization_id AND workspace_id IS NULL AND id < @after_id
ORDER BY id DESC
LIMIT @page_limit;

-- name: InvitationRevoke :one
UPDATE invitation
SET revoked_at = now(), version = version + 1, updated_at = now()
WHERE id = @id
RETURNING *;

-- name: InvitationGetByTokenHash :one
-- expired uses the database clock.
SELECT sqlc.embed(invitation), (invitation.expires_at <= now())::boolean AS expired,
       EXISTS (SELECT 1 FROM user_account u WHERE lower(u.email) = lower(invitation.email))::boolean AS has_account
FROM invitation
WHERE invitation.token_hash = @token_hash;

-- name: InvitationGetByTokenHashForUpdate :one
SELECT sqlc.embed(invitation), (invitation.expires_at <= now())::boolean AS expired
FROM invitation
WHERE invitation.token_hash = @token_hash
FOR UPDATE OF invitation;

-- name: InvitationAccountGet :one
-- The account an invitation is for. FOR SHARE holds off a concurrent disable
-- until the acceptance commits.
SELECT id, principal_id, disabled_at FROM user_account
WHERE lower(email) = lower(@email)
FOR SHARE;

-- name: InvitationMarkAccepted :one
UPDATE invitation
SET accepted_at = now(), principal_id = @principal_id, version = version + 1, updated_at = now()
WHERE id = @id
RETURNING *;

-- name: WorkspaceMemberAddFromInvitation :execrows
-- Adds the membership unless the principal is a member already, whose role stays.
INSERT INTO workspace_member (workspace_id, principal_id, role)
VALUES (@workspace_id, @principal_id, @role)
ON CONFLICT (workspace_id, principal_id) DO NOTHING;

-- name: OrganizationMemberAddFromInvitation :execrows
-- Adds the membership unless the principal is a member already, whose role stays.
INSERT INTO organization_member (organization_id, principal_id, role)
VALUES (@organization_id, @principal_id, @role)
ON CONFLICT (organization_id, principal_id) DO NOTHING;

-- name: InvitationPreviewByTokenHash :one
-- What the console's accept page shows of an invitation before it is accepted:
-- where it leads and who sent it (never whether the address has an account).
SELECT i.id, i.email, i.role, i.expires_at, i.accepted_at, i.revoked_at,
       (i.expires_at <= now())::boolean AS expired,
       o.name AS organization_name, w.name AS workspace_name, p.display_name AS invited_by
FROM invitation i
JOIN organization o ON o.id = i.organization_id
LEFT JOIN workspace w ON w.id = i.workspace_id
JOIN principal p ON p.id = i.invited_by_id
WHERE i.token_hash = @token_hash;

-- name: InvitationConfirmationUpsert :one
-- Stores the pending acceptance of an invitation, replacing an older one (its
-- link stops working). expires_at is counted from the database clock.
INSERT INTO invitation_confirmation (id, invitation_id, token_hash, password_hash, display_name, expires_at)
VALUES (@id, @invitation_id, @token_hash, @password_hash, @display_name,
        now() + make_interval(secs => sqlc.arg('ttl_seconds')::double precision))
ON CONFLICT (invitation_id) DO UPDATE
SET id = EXCLUDED.id, token_hash = EXCLUDED.token_hash, password_hash = EXCLUDED.password_hash,
    display_name = EXCLUDED.display_name, created_at = now(), expires_at = EXCLUDED.expires_at
RETURNING *;

-- name: InvitationConfirmationGetByTokenHash :one
-- What the confirmation page shows of a pending acceptance, and whether its
-- link (database clock) or its invitation can still be used.
SELECT c.expires_at, (c.expires_at <= now())::boolean AS expired,
       i.email, i.role, i.accepted_at, i.revoked_at, (i.expires_at <= now())::boolean AS invitation_expired,
       o.name AS organization_name, w.name AS workspace_name, p.display_name AS invited_by
FROM invitation_confirmation c
JOIN invitation i ON i.id = c.invitation_id
JOIN organization o ON o.id = i.organization_id
LEFT JOIN workspace w ON w.id = i.workspace_id
JOIN principal p ON p.id = i.invited_by_id
WHERE c.token_hash = @token_hash;

-- name: InvitationConfirmationTake :one
-- Uses a pending acceptance up: the row is deleted, so its link works once.
DELETE FROM invitation_confirmation
WHERE token_hash = @token_hash
RETURNING *, (expires_at <= now())::boolean AS expired;

-- name: InvitationGetByIDForUpdate :one
SELECT sqlc.embed(invitation), (invitation.expires_at <= now())::boolean AS expired
FROM invitation
WHERE invitation.id = @id
FOR UPDATE OF invitation;
