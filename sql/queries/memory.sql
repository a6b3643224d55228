-- name: MemoryInsert :one
INSERT INTO memory (id, workspace_id, kind, provider_id, namespace, name, description, created_by_id, updated_by_id)
VALUES (@id, @workspace_id, @kind, sqlc.narg('provider_id'), sqlc.narg('namespace'), @name, @description,
        @created_by_id, @created_by_id)
RETURNING *;

-- name: MemoryGet :one
SELECT * FROM memory WHERE workspace_id = @workspace_id AND id = @id;

-- name: MemoryGetForUpdate :one
-- FOR UPDATE (not NO KEY): the row may be deleted by the holder.
SELECT * FROM memory WHERE workspace_id = @workspace_id AND id = @id
FOR UPDATE;

-- name: MemoryList :many
SELECT * FROM memory
WHERE workspace_id = @workspace_id AND id < @after_id
ORDER BY id DESC
LIMIT @page_limit;

-- name: MemoryUpdate :one
UPDATE memory
SET name = @name, description = @description,
    updated_by_id = @updated_by_id, version = version + 1, updated_at = now()
WHERE id = @id
RETURNING *;

-- name: MemoryDelete :exec
DELETE FROM memory WHERE id = @id;

-- name: MemoryRecordDeleteByMemory :execrows
DELETE FROM memory_record WHERE memory_id = @memory_id;

-- name: MemoryForUse :one
-- For a resource about to refer to the memory (an agent revision): a
-- concurrent delete either is seen or waits until the referrer is written.
SELECT * FROM memory WHERE workspace_id = @workspace_id AND id = @id
FOR SHARE;
