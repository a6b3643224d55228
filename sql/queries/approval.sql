-- Tool approvals (internal/run, docs/decisions/0052-tool-approvals.md).

-- ApprovalInsert records the calls of a suspending run that wait for a
-- person; a call recorded already (a step resumed and suspended again)
-- keeps its row.
-- name: ApprovalInsert :exec
INSERT INTO run_approval (run_id, call_id, workspace_id, thread_id, name, arguments, on_timeout, expires_at)
SELECT @run_id, c.call_id, @workspace_id, @thread_id, n.name, g.arguments, @on_timeout,
    now() + make_interval(secs => @timeout_seconds::float8)
FROM unnest(@call_ids::text[]) WITH ORDINALITY AS c(call_id, ord)
JOIN unnest(@names::text[]) WITH ORDINALITY AS n(name, ord) ON n.ord = c.ord
JOIN unnest(@arguments::text[]) WITH ORDINALITY AS g(arguments, ord) ON g.ord = c.ord
ON CONFLICT (run_id, call_id) DO NOTHING;

-- ApprovalLock locks one call's approval for a decision.
-- name: ApprovalLock :one
SELECT * FROM run_approval WHERE run_id = @run_id AND call_id = @call_id FOR UPDATE;

-- ApprovalDecide records a decision on a pending call: approved, denied,
-- expired (the timeout passed) or closed (the run ended first).
-- name: ApprovalDecide :one
UPDATE run_approval
SET status = @status, message = sqlc.narg('message'), decided_by_id = sqlc.narg('decided_by_id'), decided_at = now()
WHERE run_id = @run_id AND call_id = @call_id AND status = 'pending'
RETURNING *;

-- ApprovalCloseOfRun closes the pending calls of a run that ended.
-- name: ApprovalCloseOfRun :execrows
UPDATE run_approval SET status = 'closed', decided_at = now()
WHERE run_id = @run_id AND status = 'pending';

-- ApprovalPendingCount counts a run's calls still waiting for a person.
-- name: ApprovalPendingCount :one
SELECT count(*)::int FROM run_approval WHERE run_id = @run_id AND status = 'pending';

-- ApprovalsDecided reads the decisions on calls of a run that were decided.
-- name: ApprovalsDecided :many
SELECT * FROM run_approval
WHERE run_id = @run_id AND call_id = ANY(@call_ids::text[]) AND status IN ('approved', 'denied', 'expired');

-- ApprovalsPendingUnder answers, for each run of run_ids, the pending calls
-- of the run and of its descendants (a parent waits while a child does),
-- oldest first.
-- name: ApprovalsPendingUnder :many
WITH RECURSIVE down AS (
    SELECT r.id AS top_id, r.id AS id FROM run r WHERE r.id = ANY(@run_ids::text[])
    UNION ALL
    SELECT down.top_id, c.id FROM run c JOIN down ON c.parent_run_id = down.id
)
SELECT down.top_id::text AS top_run_id, a.run_id, a.call_id, a.workspace_id, a.thread_id, a.name, a.arguments,
    a.status, a.on_timeout, a.message, a.decided_by_id, a.requested_at, a.expires_at, a.decided_at
FROM down
JOIN run_approval a ON a.run_id = down.id
WHERE a.status = 'pending'
ORDER BY down.top_id, a.requested_at, a.call_id;

-- ApprovalsExpired locks up to page_limit pending calls whose timeout passed.
-- name: ApprovalsExpired :many
SELECT * FROM run_approval
WHERE status = 'pending' AND expires_at < now()
ORDER BY expires_at
LIMIT @page_limit
FOR UPDATE SKIP LOCKED;

-- RunSetWaiting sets the status of an unfinished run no attempt holds to
-- waiting or running. Time spent waiting (waiting_since) is added to
-- approval_waited_seconds when the wait ends. No row when it had it already.
-- name: RunSetWaiting :one
UPDATE run
SET status = @status::text,
    approval_waited_seconds = approval_waited_seconds + CASE WHEN @status::text <> 'waiting' AND waiting_since IS NOT NULL
        THEN extract(epoch FROM now() - waiting_since)::float8 ELSE 0 END,
    waiting_since = CASE WHEN @status::text = 'waiting' THEN coalesce(waiting_since, now()) ELSE NULL END,
    updated_at = now()
WHERE id = @id AND finished_at IS NULL AND lease_expires_at IS NULL AND status IN ('running', 'waiting') AND status <> @status::text
RETURNING *;

-- RunAncestorsLock locks the unfinished ancestors of run id, the deepest
-- first, whether an attempt holds them or not. A transaction that changes
-- what they should show (a call below them asks for a person, or is decided
-- on) takes these locks before it reads their status (RunAncestorsWaiting,
-- in a later statement), and an attempt's Suspend reads the calls below its
-- run while it holds the run's row: whichever locks first, the other sees
-- its work.
-- name: RunAncestorsLock :exec
WITH RECURSIVE up AS (
    SELECT r.parent_run_id AS id FROM run r WHERE r.id = @id AND r.parent_run_id IS NOT NULL
    UNION ALL
    SELECT p.parent_run_id FROM run p JOIN up ON p.id = up.id WHERE p.parent_run_id IS NOT NULL
)
SELECT r.id FROM run r
JOIN up ON up.id = r.id
WHERE r.finished_at IS NULL
ORDER BY r.depth DESC
FOR UPDATE OF r;

-- RunAncestorsWaiting answers the unfinished, unleased ancestors of run id
-- with the status they should show: waiting when a call of theirs or of a
-- run below them waits for a person, else running. Only those whose
-- status differs are answered (and locked).
-- name: RunAncestorsWaiting :many
WITH RECURSIVE up AS (
    SELECT r.parent_run_id AS id FROM run r WHERE r.id = @id AND r.parent_run_id IS NOT NULL
    UNION ALL
    SELECT p.parent_run_id FROM run p JOIN up ON p.id = up.id WHERE p.parent_run_id IS NOT NULL
), blocked AS (
    SELECT a.run_id AS id FROM run_approval a JOIN run t ON t.id = a.run_id
    WHERE a.status = 'pending' AND (t.id = @root_id OR t.root_run_id = @root_id)
    UNION
    SELECT p.parent_run_id FROM run p JOIN blocked ON p.id = blocked.id WHERE p.parent_run_id IS NOT NULL
), want AS (
    SELECT up.id, CASE WHEN up.id IN (SELECT blocked.id FROM blocked) THEN 'waiting' ELSE 'running' END AS status
    FROM up
)
SELECT r.id, want.status::text AS want_status FROM run r
JOIN want ON want.id = r.id
WHERE r.finished_at IS NULL AND r.lease_expires_at IS NULL AND r.status IN ('running', 'waiting') AND r.status <> want.status
ORDER BY r.depth DESC
FOR UPDATE OF r;

-- RunSubtreeWaits reports whether a call of a run below run id waits for a
-- person.
-- name: RunSubtreeWaits :one
WITH RECURSIVE down AS (
    SELECT c.id FROM run c WHERE c.parent_run_id = @id
    UNION ALL
    SELECT c.id FROM run c JOIN down ON c.parent_run_id = down.id
)
SELECT EXISTS (SELECT 1 FROM run_approval a JOIN down ON a.run_id = down.id WHERE a.status = 'pending')::bool;
