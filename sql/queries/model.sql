-- name: ModelInsert :one
INSERT INTO model (workspace_id, key, provider_id, api, model, settings, enabled, created_by_id, updated_by_id)
VALUES (@workspace_id, @key, @provider_id, @api, @model, @settings, @enabled, @created_by_id, @created_by_id)
RETURNING *;

-- name: ModelGet :one
SELECT * FROM model WHERE workspace_id = @workspace_id AND key = @key;

-- name: ModelGetForUpdate :one
SELECT * FROM model WHERE workspace_id = @workspace_id AND key = @key
FOR NO KEY UPDATE;

-- name: ModelList :many
-- Newest first; the page after the cursor (after_created_at, after_key).
SELECT * FROM model
WHERE workspace_id = @workspace_id AND (created_at, key) < (@after_created_at::timestamptz, @after_key::text)
ORDER BY created_at DESC, key DESC
LIMIT @page_limit;

-- name: ModelUpdate :one
UPDATE model
SET provider_id = @provider_id, api = @api, model = @model, settings = @settings, enabled = @enabled,
    updated_by_id = @updated_by_id, version = version + 1, updated_at = now()
WHERE workspace_id = @workspace_id AND key = @key
RETURNING *;

