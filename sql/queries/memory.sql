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

-- name: MemoryUsedBy :one
-- An agent that is not archived and one of whose revisions names the memory:
-- a thread may pin any revision, so any of them can still run. Run after the
-- memory row is locked: a publish naming it holds it FOR SHARE until it
-- commits, so one committed meanwhile is seen here.
SELECT h.id AS agent_id, r.number
FROM revision r JOIN head h ON h.id = r.head_id
WHERE h.workspace_id = @workspace_id AND h.kind = 'agent' AND h.archived_at IS NULL
  AND r.config @> jsonb_build_object('memories', jsonb_build_array(jsonb_build_object('memory_id', @memory_id::text)))
ORDER BY h.id, r.number
LIMIT 1;
