-- name: OrganizationAnyExists :one
SELECT EXISTS (SELECT 1 FROM organization);

-- name: OrganizationInsert :one
INSERT INTO organization (id, name) VALUES (@id, @name)
RETURNING *;

-- name: OrganizationGet :one
SELECT * FROM organization WHERE id = @id;

-- name: OrganizationNameExists :one
-- Organization names are compared whatever their case.
SELECT EXISTS (SELECT 1 FROM organization WHERE lower(name) = lower(@name));

-- name: OrganizationListSummary :many
-- Every organization, oldest first, with its number of workspaces, its owners'
-- e-mail addresses and the addresses invited to own it (pending, unexpired).
SELECT o.id, o.name, o.created_at,
       (SELECT count(*) FROM workspace w WHERE w.organization_id = o.id)::integer AS workspaces,
       (SELECT coalesce(array_agg(u.email ORDER BY lower(u.email)), '{}')
        FROM organization_member m JOIN user_account u ON u.principal_id = m.principal_id
        WHERE m.organization_id = o.id AND m.role = 'owner')::text[] AS owners,
       (SELECT coalesce(array_agg(i.email ORDER BY lower(i.email)), '{}')
        FROM invitation i
        WHERE i.organization_id = o.id AND i.workspace_id IS NULL AND i.role = 'owner'
          AND i.accepted_at IS NULL AND i.revoked_at IS NULL AND i.expires_at > now())::text[] AS invited_owners
FROM organization o
ORDER BY o.created_at, o.id;

-- name: PrincipalInsert :one
INSERT INTO principal (id, kind, display_name) VALUES (@id, @kind, @display_name)
RETURNING *;

-- name: UserInsert :one
INSERT INTO user_account (id, principal_id, email, password_hash)
VALUES (@id, @principal_id, @email, sqlc.narg('password_hash'))
RETURNING *;

-- name: UserGetByEmailForUpdate :one
SELECT * FROM user_account WHERE lower(email) = lower(@email) FOR UPDATE;

-- name: UserGetByEmail :one
SELECT * FROM user_account WHERE lower(email) = lower(@email);

-- name: UserSetDisabled :one
-- Disables (disabled = true) or enables the account; grants and keys stay as they are.
UPDATE user_account
SET disabled_at = CASE WHEN @disabled::boolean THEN now() ELSE NULL END,
    version = version + 1,
    updated_at = now()
WHERE id = @id
RETURNING *;

-- name: WorkspaceInsert :one
INSERT INTO workspace (id, organization_id, name, created_by_id, updated_by_id)
VALUES (@id, @organization_id, @name, @created_by_id, @created_by_id)
RETURNING *;

-- name: OrganizationMemberInsert :one
INSERT INTO organization_member (organization_id, principal_id, role)
VALUES (@organization_id, @principal_id, @role)
RETURNING *;

-- name: WorkspaceMemberInsert :one
INSERT INTO workspace_member (workspace_id, principal_id, role)
VALUES (@workspace_id, @principal_id, @role)
RETURNING *;

-- name: APIKeyAuthenticate :one
-- Everything a request needs to know about its key, in one round trip: the key,
-- its workspace and organization, its principal (and user, if any), and the
-- principal's current roles. expired uses the database clock.
SELECT k.id, k.workspace_id, k.principal_id, k.name, k.role, k.prefix, k.expires_at,
       (k.revoked_at IS NOT NULL)::boolean AS revoked,
       (k.expires_at IS NOT NULL AND k.expires_at <= now())::boolean AS expired,
       k.last_used_at,
       w.name AS workspace_name, w.organization_id, o.name AS organization_name,
       p.kind AS principal_kind, p.display_name,
       u.id AS user_id, u.email AS user_email, u.disabled_at AS user_disabled_at,
       wm.role AS workspace_role, om.role AS organization_role
FROM api_key k
JOIN workspace w ON w.id = k.workspace_id
JOIN organization o ON o.id = w.organization_id
JOIN principal p ON p.id = k.principal_id
LEFT JOIN user_account u ON u.principal_id = p.id
LEFT JOIN workspace_member wm ON wm.workspace_id = k.workspace_id AND wm.principal_id = k.principal_id
LEFT JOIN organization_member om ON om.organization_id = w.organization_id AND om.principal_id = k.principal_id
WHERE k.token_hash = @token_hash;

-- name: APIKeyTouch :exec
-- Records use at most once a minute, so authentication does not write per request.
UPDATE api_key SET last_used_at = now()
WHERE id = @id AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute');
