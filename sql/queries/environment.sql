-- name: EnvironmentGet :one
SELECT * FROM environment WHERE workspace_id = @workspace_id AND id = @id;

-- name: EnvironmentGetForUpdate :one
SELECT * FROM environment WHERE workspace_id = @workspace_id AND id = @id
FOR NO KEY UPDATE;

-- name: EnvironmentList :many
SELECT * FROM environment
WHERE workspace_id = @workspace_id AND id < @after_id
ORDER BY id DESC
LIMIT @page_limit;

-- name: EnvironmentListByTemplate :many
SELECT * FROM environment
WHERE workspace_id = @workspace_id AND template_id = @template_id AND id < @after_id
ORDER BY id DESC
LIMIT @page_limit;

-- name: EnvironmentSetStatus :one
UPDATE environment
SET status = @status, updated_by_id = @updated_by_id, version = version + 1, updated_at = now()
WHERE id = @id
RETURNING *;
