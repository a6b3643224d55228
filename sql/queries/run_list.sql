-- Filtered lists of threads and runs (GET /api/v1/threads, GET /api/v1/runs).
-- Each filter has the query its index serves; the optional ones left are
-- checked on the few rows the index finds.

-- name: ThreadListByAgent :many
SELECT * FROM thread
WHERE workspace_id = @workspace_id AND agent_id = @agent_id AND id < @after_id
ORDER BY id DESC
LIMIT @page_limit;

-- RunListOfThread lists a thread's runs, optionally of one status and agent
-- and created after a time (floor_id as in RunList).
-- name: RunListOfThread :many
SELECT * FROM run
WHERE workspace_id = @workspace_id AND thread_id = @thread_id AND id < @after_id AND id >= @floor_id
    AND (sqlc.narg('status')::text IS NULL OR status = sqlc.narg('status')::text)
    AND (sqlc.narg('agent_id')::text IS NULL OR agent_id = sqlc.narg('agent_id')::text)
    AND (sqlc.narg('created_after')::timestamptz IS NULL OR created_at > sqlc.narg('created_after')::timestamptz)
ORDER BY id DESC
LIMIT @page_limit;

-- RunListByAgent lists an agent's runs, optionally of one status and created
-- after a time (floor_id as in RunList).
-- name: RunListByAgent :many
SELECT * FROM run
WHERE workspace_id = @workspace_id AND agent_id = @agent_id AND id < @after_id AND id >= @floor_id
    AND (sqlc.narg('status')::text IS NULL OR status = sqlc.narg('status')::text)
    AND (sqlc.narg('created_after')::timestamptz IS NULL OR created_at > sqlc.narg('created_after')::timestamptz)
ORDER BY id DESC
LIMIT @page_limit;
