-- name: LoginSessionInsert :one
-- Console sign-in: login sessions and mailed links store their token's SHA-256
-- only; every expiry is computed and compared with the database clock.
INSERT INTO login_session (id, user_id, token_hash, expires_at)
VALUES (@id, @user_id, @token_hash, now() + make_interval(secs => @ttl_seconds::integer))
RETURNING *;

-- name: LoginSessionResolve :one
-- The live session of a token and its user. Revoked and expired sessions, and
-- sessions of disabled users, resolve to no row.
SELECT s.id, s.user_id, s.expires_at, s.last_seen_at,
       u.email, u.principal_id, p.display_name
FROM login_session s
JOIN user_account u ON u.id = s.user_id
JOIN principal p ON p.id = u.principal_id
WHERE s.token_hash = @token_hash
  AND s.revoked_at IS NULL
  AND s.expires_at > now()
  AND u.disabled_at IS NULL;

-- name: LoginSessionTouch :exec
-- Records use at most once a minute, so page views rarely write.
UPDATE login_session SET last_seen_at = now()
WHERE id = @id AND (last_seen_at IS NULL OR last_seen_at < now() - interval '1 minute');

-- name: LoginSessionRevokeByHash :exec
UPDATE login_session SET revoked_at = now()
WHERE token_hash = @token_hash AND revoked_at IS NULL;

-- name: LoginSessionRevokeByUser :execrows
UPDATE login_session SET revoked_at = now()
WHERE user_id = @user_id AND revoked_at IS NULL;

-- name: MailLinkInsert :one
INSERT INTO mail_link (id, user_id, purpose, token_hash, expires_at)
VALUES (@id, @user_id, @purpose, @token_hash, now() + make_interval(secs => @ttl_seconds::integer))
RETURNING *;

-- name: MailLinkGetByHash :one
-- A link of the given purpose with its user; usable tells whether it may still
-- be used (not used, not revoked, not expired, user enabled).
SELECT l.id, l.user_id, l.expires_at, u.email, u.principal_id,
       (l.used_at IS NULL AND l.revoked_at IS NULL AND l.expires_at > now() AND u.disabled_at IS NULL)::boolean AS usable
FROM mail_link l
JOIN user_account u ON u.id = l.user_id
WHERE l.token_hash = @token_hash AND l.purpose = @purpose;

-- name: MailLinkGetByHashForUpdate :one
-- As MailLinkGetByHash, locking the link so that it is used once.
SELECT l.id, l.user_id, l.expires_at, u.email, u.principal_id,
       (l.used_at IS NULL AND l.revoked_at IS NULL AND l.expires_at > now() AND u.disabled_at IS NULL)::boolean AS usable
FROM mail_link l
JOIN user_account u ON u.id = l.user_id
WHERE l.token_hash = @token_hash AND l.purpose = @purpose
FOR UPDATE OF l;

-- name: MailLinkMarkUsed :exec
UPDATE mail_link SET used_at = now() WHERE id = @id;

-- name: MailLinkRevokeOthers :exec
-- Revokes the user's other outstanding links of the same purpose.
UPDATE mail_link SET revoked_at = now()
WHERE user_id = @user_id AND purpose = @purpose AND id <> @id
  AND used_at IS NULL AND revoked_at IS NULL;

-- name: UserSetPasswordHash :one
UPDATE user_account
SET password_hash = @password_hash, version = version + 1, updated_at = now()
WHERE id = @id
RETURNING version;

-- name: PrincipalOrganizationRoles :many
-- The organizations a principal is a member of, with its role.
SELECT o.id, o.name, om.role
FROM organization_member om
JOIN organization o ON o.id = om.organization_id
WHERE om.principal_id = @principal_id
ORDER BY o.name, o.id;

-- name: PrincipalWorkspaceAccess :many
-- The workspaces a principal can act in, with its roles: those it is a member
-- of, and every workspace of the organizations it owns or administers.
SELECT w.id, w.name, w.organization_id, o.name AS organization_name,
       wm.role AS workspace_role, om.role AS organization_role
FROM workspace w
JOIN organization o ON o.id = w.organization_id
LEFT JOIN workspace_member wm ON wm.workspace_id = w.id AND wm.principal_id = @principal_id
LEFT JOIN organization_member om ON om.organization_id = w.organization_id AND om.principal_id = @principal_id
WHERE wm.principal_id IS NOT NULL OR om.role IN ('owner', 'admin')
ORDER BY o.name, o.id, w.name, w.id
LIMIT @row_limit;

-- name: PrincipalWorkspaceRole :one
-- One workspace a principal can act in, with its roles, as
-- PrincipalWorkspaceAccess lists them; no row when it cannot.
SELECT w.id, w.name, w.organization_id, o.name AS organization_name,
       wm.role AS workspace_role, om.role AS organization_role
FROM workspace w
JOIN organization o ON o.id = w.organization_id
LEFT JOIN workspace_member wm ON wm.workspace_id = w.id AND wm.principal_id = @principal_id
LEFT JOIN organization_member om ON om.organization_id = w.organization_id AND om.principal_id = @principal_id
WHERE w.id = @workspace_id AND (wm.principal_id IS NOT NULL OR om.role IN ('owner', 'admin'));
