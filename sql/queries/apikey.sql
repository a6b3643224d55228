-- API keys of a workspace. Every query names the workspace, so a key of another
-- workspace is a miss (404), exactly like an absent one.

-- name: APIKeyCreate :one
-- Inserts nothing (no rows) when expires_at is not in the future by the
-- database's clock, which every expiry check uses.
INSERT INTO api_key (id, workspace_id, principal_id, name, role, token_hash, prefix, expires_at, created_by_id)
SELECT @id::text, @workspace_id::text, @principal_id::text, @name::text, @role::text, @token_hash::bytea,
       @prefix::text, sqlc.narg('expires_at')::timestamptz, @created_by_id::text
WHERE sqlc.narg('expires_at')::timestamptz IS NULL OR sqlc.narg('expires_at')::timestamptz > now()
RETURNING *;

-- name: APIKeyListByWorkspace :many
-- The keys of a workspace, newest first; of one principal when principal_id
-- is set.
SELECT * FROM api_key
WHERE workspace_id = @workspace_id AND id < @after_id
  AND (sqlc.narg('principal_id')::text IS NULL OR principal_id = sqlc.narg('principal_id'))
ORDER BY id DESC
LIMIT @page_limit;

-- name: APIKeyGetForUpdate :one
SELECT * FROM api_key WHERE workspace_id = @workspace_id AND id = @id FOR UPDATE;

-- name: APIKeyRevoke :one
UPDATE api_key SET revoked_at = now(), version = version + 1, updated_at = now()
WHERE id = @id AND revoked_at IS NULL
RETURNING *;

-- name: APIKeyRevokeByPrincipal :many
-- Revokes every live key of a principal in a workspace (the member was removed).
UPDATE api_key SET revoked_at = now(), version = version + 1, updated_at = now()
WHERE workspace_id = @workspace_id AND principal_id = @principal_id AND revoked_at IS NULL
RETURNING id, version;
