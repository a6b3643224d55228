-- name: EnvironmentTemplateInsert :one
INSERT INTO environment_template (id, workspace_id, provider_id, name, description, config, idle_stop_seconds,
                                  idle_delete_seconds, labels, enabled, created_by_id, updated_by_id)
VALUES (@id, @workspace_id, @provider_id, @name, @description, @config, sqlc.narg('idle_stop_seconds'),
        sqlc.narg('idle_delete_seconds'), @labels, @enabled, @created_by_id, @created_by_id)
RETURNING *;

-- name: EnvironmentTemplateGet :one
SELECT * FROM environment_template WHERE workspace_id = @workspace_id AND id = @id;

-- name: EnvironmentTemplateGetForUpdate :one
-- NO KEY UPDATE: serializes writers of the row without blocking the
-- environments that reference it (KEY SHARE).
SELECT * FROM environment_template WHERE workspace_id = @workspace_id AND id = @id
FOR NO KEY UPDATE;

-- name: EnvironmentTemplateList :many
-- Newest first, after the cursor. enabled (null: any) is the `archived` filter
-- negated; pattern (empty: any) is the escaped ILIKE pattern of `q`.
SELECT * FROM environment_template
WHERE workspace_id = @workspace_id AND id < @after_id
  AND (sqlc.narg('enabled')::boolean IS NULL OR enabled = sqlc.narg('enabled')::boolean)
  AND (@pattern::text = '' OR name ILIKE @pattern::text OR description ILIKE @pattern::text)
ORDER BY id DESC
LIMIT @page_limit;

-- name: EnvironmentTemplateListByLabels :many
-- EnvironmentTemplateList with label selectors: the labels, scoped by the
-- workspace, must contain the selectors' object (internal/labels.Filter), which
-- the GIN index environment_template_labels_idx answers; the expression is the
-- index's, exactly.
SELECT * FROM environment_template
WHERE workspace_id = @workspace_id AND id < @after_id
  AND (labels || jsonb_object(ARRAY['', workspace_id])) @> @selectors::jsonb
  AND (sqlc.narg('enabled')::boolean IS NULL OR enabled = sqlc.narg('enabled')::boolean)
  AND (@pattern::text = '' OR name ILIKE @pattern::text OR description ILIKE @pattern::text)
ORDER BY id DESC
LIMIT @page_limit;

-- name: EnvironmentTemplateUpdate :one
UPDATE environment_template
SET name = @name, description = @description, config = @config,
    idle_stop_seconds = sqlc.narg('idle_stop_seconds'), idle_delete_seconds = sqlc.narg('idle_delete_seconds'),
    labels = @labels, enabled = @enabled,
    updated_by_id = @updated_by_id, version = version + 1, updated_at = now()
WHERE id = @id
RETURNING *;

-- name: EnvironmentTemplateForUse :one
-- For a resource about to refer to the template (an agent revision): FOR SHARE
-- conflicts with the template PATCH's FOR NO KEY UPDATE, so a concurrent
-- disable is either seen or waits until the referring resource is written.
SELECT * FROM environment_template WHERE workspace_id = @workspace_id AND id = @id
FOR SHARE;
