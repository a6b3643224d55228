-- name: ModelInsert :one
INSERT INTO model (workspace_id, key, provider_id, api, model, settings, context_window, enabled, created_by_id, updated_by_id)
VALUES (@workspace_id, @key, @provider_id, @api, @model, @settings, sqlc.narg('context_window'), @enabled, @created_by_id, @created_by_id)
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
SET provider_id = @provider_id, api = @api, model = @model, settings = @settings, context_window = sqlc.narg('context_window'), enabled = @enabled,
    updated_by_id = @updated_by_id, version = version + 1, updated_at = now()
WHERE workspace_id = @workspace_id AND key = @key
RETURNING *;


-- name: ModelForRunStart :one
-- The model a run is about to start on, with its provider's state. FOR SHARE
-- OF p conflicts with the provider's PATCH (FOR NO KEY UPDATE), so a
-- concurrent disable of the provider is either seen or waits until the run is
-- written.
SELECT m.enabled, p.id AS provider_id, p.kind AS provider_kind, p.type AS provider_type, p.enabled AS provider_enabled
FROM model m JOIN provider p ON p.workspace_id = m.workspace_id AND p.id = m.provider_id
WHERE m.workspace_id = @workspace_id AND m.key = @key
FOR SHARE OF p;

-- name: ModelForRun :one
-- The model an attempt calls and its provider, as they are now, in one read.
SELECT sqlc.embed(m), p.type AS provider_type, p.config AS provider_config, p.credential AS provider_credential,
       p.extra_headers AS provider_extra_headers, p.enabled AS provider_enabled
FROM model m JOIN provider p ON p.workspace_id = m.workspace_id AND p.id = m.provider_id
WHERE m.workspace_id = @workspace_id AND m.key = @key;
