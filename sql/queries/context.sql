-- name: ThreadLatestCompaction :one
-- The data of the thread's newest context.compacted event: the summary of
-- its older messages a run starts from.
SELECT data FROM thread_event
WHERE thread_id = @thread_id AND type = 'context.compacted'
ORDER BY seq DESC
LIMIT 1;
