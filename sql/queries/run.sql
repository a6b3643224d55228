-- Threads, inputs, runs, attempts, messages and events (internal/run).

-- name: ThreadInsert :one
INSERT INTO thread (id, workspace_id, agent_id, revision_id, metadata, created_by_id)
VALUES (@id, @workspace_id, @agent_id, sqlc.narg('revision_id'), @metadata, @created_by_id)
RETURNING *;

-- name: ThreadGet :one
SELECT * FROM thread WHERE workspace_id = @workspace_id AND id = @id;

-- ThreadLock locks a thread for a change of its queue or its active run.
-- name: ThreadLock :one
SELECT * FROM thread WHERE workspace_id = @workspace_id AND id = @id FOR UPDATE;

-- name: ThreadList :many
SELECT * FROM thread
WHERE workspace_id = @workspace_id AND id < @after_id
ORDER BY id DESC
LIMIT @page_limit;

-- name: ThreadSetActiveRun :exec
UPDATE thread SET active_run_id = sqlc.narg('run_id'), updated_at = now() WHERE id = @id;

-- name: ThreadSetEnvironment :exec
UPDATE thread SET environment_id = @environment_id, updated_at = now() WHERE id = @id;

-- name: InputInsert :one
INSERT INTO thread_input (id, workspace_id, thread_id, content, created_by_id, traceparent, tracestate)
VALUES (@id, @workspace_id, @thread_id, @content, @created_by_id, sqlc.narg('traceparent'), sqlc.narg('tracestate'))
RETURNING *;

-- name: InputGet :one
SELECT * FROM thread_input WHERE id = @id;

-- name: InputStart :one
UPDATE thread_input SET status = 'started', run_id = @run_id, started_at = now()
WHERE id = @id AND status = 'queued'
RETURNING *;

-- InputNextQueued is the oldest queued input of a thread.
-- name: InputNextQueued :one
SELECT * FROM thread_input
WHERE thread_id = @thread_id AND status = 'queued'
ORDER BY id
LIMIT 1;

-- name: InputList :many
SELECT * FROM thread_input
WHERE thread_id = @thread_id AND id < @after_id
ORDER BY id DESC
LIMIT @page_limit;

-- IdleThreadsWithQueue lists threads with no unfinished run and a queued
-- input, oldest input first (advance_threads).
-- name: IdleThreadsWithQueue :many
SELECT DISTINCT ON (i.thread_id) i.thread_id, i.workspace_id, i.id AS input_id
FROM thread_input i
JOIN thread t ON t.id = i.thread_id
WHERE i.status = 'queued' AND t.active_run_id IS NULL
ORDER BY i.thread_id, i.id
LIMIT @page_limit;

-- name: RunInsert :one
INSERT INTO run (id, workspace_id, thread_id, input_id, agent_id, revision_id, model_key, skill_revisions,
    parent_run_id, parent_call_id, root_run_id, depth, max_attempts, created_by_id, traceparent, tracestate)
VALUES (@id, @workspace_id, @thread_id, sqlc.narg('input_id'), @agent_id, @revision_id, @model_key, @skill_revisions,
    sqlc.narg('parent_run_id'), sqlc.narg('parent_call_id'), sqlc.narg('root_run_id'), @depth, @max_attempts, @created_by_id,
    sqlc.narg('traceparent'), sqlc.narg('tracestate'))
RETURNING *;

-- name: RunGet :one
SELECT * FROM run WHERE workspace_id = @workspace_id AND id = @id;

-- name: RunGetByID :one
SELECT * FROM run WHERE id = @id;

-- name: RunLock :one
SELECT * FROM run WHERE workspace_id = @workspace_id AND id = @id FOR UPDATE;

-- RunList lists the workspace's runs, optionally of one status and created
-- after a time. floor_id bounds the index scan from below (an id made a
-- little before created_after, "" for none; ids sort by creation time), so
-- the last page of a time-filtered list does not walk every older run.
-- name: RunList :many
SELECT * FROM run
WHERE workspace_id = @workspace_id AND id < @after_id AND id >= @floor_id
    AND (sqlc.narg('status')::text IS NULL OR status = sqlc.narg('status')::text)
    AND (sqlc.narg('created_after')::timestamptz IS NULL OR created_at > sqlc.narg('created_after')::timestamptz)
ORDER BY id DESC
LIMIT @page_limit;

-- RunClaimLock serialises claims across workers until the claim's
-- transaction ends, so that the claim statement after it (sent in the same
-- round trip) counts every lease committed before it: without it, two
-- workers claiming at once could each see a workspace under
-- worker.workspace_max_running and together put it over.
-- name: RunClaimLock :exec
SELECT pg_advisory_xact_lock(hashtextextended('svc.run_claim', 0));

-- RunClaim claims up to page_limit runs for worker, fairly across
-- workspaces, in one statement (docs/decisions/0038-fair-claims.md):
--   ws:     the workspaces with unleased, unfinished runs (a skip scan of
--           run_claim_idx, one index probe per workspace);
--   cand:   each workspace's oldest ready runs, at most as many as its
--           limit leaves (max_running minus the runs it holds leases for),
--           each ranked share = running + its place in the workspace's line;
--   pick:   the page_limit candidates of lowest share, oldest ready first
--           among equal shares, locked; rows others hold are skipped;
--   leased: each picked run leased to a new attempt (its id made here);
-- the updates find their rows by primary key (= ANY of an array): joined
-- to the CTEs, whose size the planner cannot estimate, they were hash
-- joins over the whole table;
-- and, for each, its attempt row, its run.status event after the thread's
-- last one, and on a first attempt one run.started webhook delivery per
-- subscription that wants it (FOR KEY SHARE, as webhook.Emit does), its
-- body as webhook.Emit and lifecycle.emit write one (timestamp in UTC with
-- six fractional digits, as package timestamp writes it). It answers the
-- leased runs with their event's number, time and data.
-- name: RunClaim :many
WITH RECURSIVE ws AS (
    (SELECT r.workspace_id FROM run r
     WHERE r.finished_at IS NULL AND r.lease_expires_at IS NULL
     ORDER BY r.workspace_id LIMIT 1)
    UNION ALL
    SELECT (SELECT r.workspace_id FROM run r
            WHERE r.finished_at IS NULL AND r.lease_expires_at IS NULL AND r.workspace_id > ws.workspace_id
            ORDER BY r.workspace_id LIMIT 1)
    FROM ws
    WHERE ws.workspace_id IS NOT NULL
), busy AS (
    SELECT ws.workspace_id,
        (SELECT count(*) FROM run r WHERE r.workspace_id = ws.workspace_id AND r.lease_expires_at IS NOT NULL)::int AS running
    FROM ws
    WHERE ws.workspace_id IS NOT NULL
), cand AS (
    SELECT c.id, c.ready_at, busy.running + c.place AS share
    FROM busy
    CROSS JOIN LATERAL (
        SELECT r.id, r.ready_at, row_number() OVER (ORDER BY r.ready_at) AS place
        FROM run r
        WHERE r.workspace_id = busy.workspace_id
            AND r.finished_at IS NULL AND r.lease_expires_at IS NULL AND r.ready_at <= now()
        ORDER BY r.ready_at
        LIMIT @page_limit::int
    ) AS c
    WHERE busy.running + c.place <= @max_running::int
), pick AS (
    SELECT r.id FROM cand
    JOIN run r ON r.id = cand.id
    WHERE r.finished_at IS NULL AND r.lease_expires_at IS NULL
    ORDER BY cand.share, cand.ready_at
    LIMIT @page_limit::int
    FOR UPDATE OF r SKIP LOCKED
), leased AS (
    UPDATE run r
    SET status = 'running',
        started_at = coalesce(r.started_at, now()),
        attempt_count = r.attempt_count + 1,
        lease_attempt_id = svc_id('att'),
        lease_worker = @worker::text,
        lease_expires_at = now() + make_interval(secs => @lease_seconds::float8),
        approval_waited_seconds = r.approval_waited_seconds
            + coalesce(extract(epoch FROM now() - r.waiting_since)::float8, 0),
        waiting_since = NULL,
        updated_at = now()
    WHERE r.id = ANY (ARRAY(SELECT pick.id FROM pick))
    RETURNING r.*
), attempts AS (
    INSERT INTO run_attempt (id, workspace_id, run_id, number, worker, from_step)
    SELECT leased.lease_attempt_id, leased.workspace_id, leased.id, leased.attempt_count, @worker::text, leased.step
    FROM leased
    RETURNING 1
), bump AS (
    UPDATE thread SET last_seq = thread.last_seq + 1
    WHERE thread.id = ANY (ARRAY(SELECT leased.thread_id FROM leased))
    RETURNING thread.id, thread.last_seq
), events AS (
    INSERT INTO thread_event (thread_id, seq, workspace_id, run_id, type, data)
    SELECT leased.thread_id, bump.last_seq, leased.workspace_id, leased.id, 'run.status',
        jsonb_build_object('status', 'running', 'attempt', leased.attempt_count, 'error', NULL)
    FROM leased
    JOIN bump ON bump.id = leased.thread_id
    RETURNING run_id, seq, at, data
), subs AS (
    SELECT s.id, s.workspace_id FROM subscription s
    WHERE s.workspace_id IN (SELECT leased.workspace_id FROM leased WHERE leased.attempt_count = 1)
        AND s.enabled AND 'run.started' = ANY (s.event_types)
    FOR KEY SHARE
), hooks AS (
    INSERT INTO outbox (id, kind, workspace_id, payload, subscription_id, event_type)
    SELECT svc_id('dlv'), 'webhook', leased.workspace_id,
        jsonb_build_object('type', 'run.started',
            'timestamp', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
            'data', jsonb_build_object('run_id', leased.id, 'thread_id', leased.thread_id, 'agent_id', leased.agent_id,
                'revision_id', leased.revision_id, 'status', leased.status, 'attempts_used', leased.attempts_used,
                'error', leased.error)),
        subs.id, 'run.started'
    FROM leased
    JOIN subs ON subs.workspace_id = leased.workspace_id
    WHERE leased.attempt_count = 1
    RETURNING kind
), wake AS (
    SELECT pg_notify('svc_outbox', 'webhook') FROM (SELECT 1 FROM hooks LIMIT 1) h
)
SELECT leased.id, leased.workspace_id, leased.thread_id, leased.input_id, leased.agent_id, leased.revision_id,
    leased.model_key, leased.skill_revisions, leased.parent_run_id, leased.parent_call_id, leased.status,
    leased.attempts_used, leased.max_attempts, leased.attempt_count, leased.lease_attempt_id, leased.lease_worker,
    leased.lease_expires_at, leased.ready_at, leased.cancel_requested_at, leased.checkpoint_key, leased.step,
    leased.usage, leased.error, leased.created_by_id, leased.created_at, leased.started_at, leased.finished_at,
    leased.updated_at, leased.waiting_calls, leased.approval_waited_seconds, leased.traceparent, leased.tracestate,
    events.seq AS event_seq, events.at AS event_at, events.data AS event_data,
    (SELECT count(*) FROM attempts)::int AS attempts, (SELECT count(*) FROM wake)::int AS hooks,
    (extract(epoch FROM now() - coalesce(leased.started_at, now())) - leased.approval_waited_seconds)::float8 AS elapsed_seconds
FROM leased
JOIN events ON events.run_id = leased.id
ORDER BY leased.id;

-- RunWaitingCount counts a workspace's runs that wait for a worker:
-- unfinished, unleased, and not waiting for subagents' results
-- (limits.workspace_max_waiting_runs).
-- name: RunWaitingCount :one
SELECT count(*)::int FROM run
WHERE workspace_id = @workspace_id AND finished_at IS NULL AND lease_expires_at IS NULL
    AND ready_at < '9999-12-31T00:00:00Z'::timestamptz;

-- RunQueueStats reads the run queue for the metrics: the runs a worker may
-- claim now (unfinished, unleased, ready; run_ready_idx), how long the one
-- ready longest has waited, and the runs leased to an attempt (run_lease_idx).
-- name: RunQueueStats :one
SELECT
    (SELECT count(*) FROM run
     WHERE finished_at IS NULL AND lease_expires_at IS NULL AND ready_at <= now())::bigint AS queued,
    coalesce(extract(epoch FROM now() - (SELECT min(ready_at) FROM run
     WHERE finished_at IS NULL AND lease_expires_at IS NULL AND ready_at <= now())), 0)::float8 AS oldest_seconds,
    (SELECT count(*) FROM run WHERE lease_expires_at IS NOT NULL)::bigint AS running;

-- RunAdmitLock serialises the runs a workspace's requests start, until
-- their transaction ends, so that two requests cannot both see the
-- workspace under limits.workspace_max_waiting_runs and together put it over.
-- name: RunAdmitLock :exec
SELECT pg_advisory_xact_lock(hashtextextended('svc.run_admit:' || @workspace_id::text, 0));

-- RunRenewLease extends the attempt's lease while it still holds it and the
-- lease has not run out; it answers whether a cancel was asked for. No row:
-- the attempt lost the run and must stop touching it.
-- name: RunRenewLease :one
UPDATE run
SET lease_expires_at = now() + make_interval(secs => @lease_seconds::float8)
WHERE id = @id AND lease_attempt_id = @attempt_id AND lease_expires_at > now()
RETURNING cancel_requested_at, lease_expires_at;

-- RunFence locks the run for a write of the attempt, and fails (no row)
-- unless the attempt still holds an unexpired lease.
-- name: RunFence :one
SELECT * FROM run
WHERE id = @id AND lease_attempt_id = @attempt_id AND lease_expires_at > now()
FOR UPDATE;

-- RunEmitFenced writes events of a thread with the next sequence numbers,
-- as EventAppend does, only while attempt_id holds an unexpired lease of run
-- run_id, in one statement (one round trip): the run is locked first, so a
-- lease taken away meanwhile is seen. No row when the lease is lost, and
-- then nothing is written. The events' numbers end at last_seq; at is when
-- they were written.
-- name: RunEmitFenced :one
WITH f AS (
    SELECT run.id FROM run
    WHERE run.id = @run_id AND run.lease_attempt_id = @attempt_id AND run.lease_expires_at > now()
    FOR UPDATE
), bump AS (
    UPDATE thread SET last_seq = thread.last_seq + cardinality(@types::text[])
    FROM f
    WHERE thread.id = @thread_id
    RETURNING thread.last_seq
), e AS (
    SELECT unnest(@types::text[]) AS type, unnest(@data::jsonb[]) AS data, unnest(@ords::int[]) AS ord
), ins AS (
    INSERT INTO thread_event (thread_id, seq, workspace_id, run_id, type, data)
    SELECT @thread_id, bump.last_seq - cardinality(@types::text[]) + e.ord, @workspace_id, f.id, e.type, e.data
    FROM f, bump, e
    RETURNING 1
)
SELECT bump.last_seq::bigint AS last_seq, now()::timestamptz AS at, (SELECT count(*) FROM ins)::int AS written
FROM bump;

-- RunCommitStep records a step of the attempt holding the run's lease, in
-- one statement (one round trip): the run's checkpoint key, step and usage;
-- the checkpoint it replaced queued for deletion when it is another
-- attempt's (a checkpoint_cleanup delivery, sent by the outbox's next scan:
-- waking the senders would serialize every step's commit on the
-- notification queue's lock), as the attempt's own names (attempt_keys) are
-- written over by its later steps and deleted by its end; the step's
-- messages and events after the thread's last ones. No row when attempt_id no longer holds an
-- unexpired lease, and then nothing is written. The run's row is updated
-- (and so locked) before the thread's, as every fenced write does.
-- name: RunCommitStep :one
WITH old AS (
    SELECT run.checkpoint_key AS key FROM run WHERE run.id = @run_id
), f AS (
    UPDATE run SET checkpoint_key = @checkpoint_key, step = @step, usage = @usage, updated_at = now()
    WHERE run.id = @run_id AND run.lease_attempt_id = @attempt_id AND run.lease_expires_at > now()
    RETURNING run.id
), cleanup AS (
    INSERT INTO outbox (id, kind, workspace_id, payload)
    SELECT @cleanup_id, 'checkpoint_cleanup', @workspace_id::text, jsonb_build_object('keys', jsonb_build_array(old.key))
    FROM f, old
    WHERE old.key IS NOT NULL AND old.key <> @checkpoint_key AND old.key <> ALL(@attempt_keys::text[])
    RETURNING kind
), bump AS (
    UPDATE thread SET message_count = thread.message_count + cardinality(@roles::text[]),
        last_seq = thread.last_seq + cardinality(@types::text[]), updated_at = now()
    FROM f
    WHERE thread.id = @thread_id
    RETURNING thread.message_count, thread.last_seq
), m AS (
    SELECT unnest(@roles::text[]) AS role, unnest(@contents::text[]) AS content,
        unnest(@tool_calls::jsonb[]) AS tool_calls, unnest(@tool_call_ids::text[]) AS tool_call_id,
        unnest(@is_errors::boolean[]) AS is_error, unnest(@message_ords::int[]) AS ord
), msgs AS (
    INSERT INTO thread_message (thread_id, position, workspace_id, run_id, role, content, tool_calls, tool_call_id, is_error)
    SELECT @thread_id, bump.message_count - cardinality(@roles::text[]) + m.ord, @workspace_id, f.id,
        m.role, m.content, m.tool_calls, nullif(m.tool_call_id, ''), m.is_error
    FROM f, bump, m
    RETURNING 1
), e AS (
    SELECT unnest(@types::text[]) AS type, unnest(@data::jsonb[]) AS data, unnest(@event_ords::int[]) AS ord
), evs AS (
    INSERT INTO thread_event (thread_id, seq, workspace_id, run_id, type, data)
    SELECT @thread_id, bump.last_seq - cardinality(@types::text[]) + e.ord, @workspace_id, f.id, e.type, e.data
    FROM f, bump, e
    RETURNING 1
)
SELECT bump.last_seq::bigint AS last_seq, now()::timestamptz AS at,
    (SELECT count(*) FROM cleanup)::int AS cleanups, (SELECT count(*) FROM msgs)::int AS messages,
    (SELECT count(*) FROM evs)::int AS events
FROM bump;

-- RunRelease ends an attempt's hold on a run without finishing it: the run is
-- claimable again at ready_at (a hand-off, or a lease the sweep expired).
-- name: RunRelease :exec
UPDATE run
SET lease_attempt_id = NULL, lease_worker = NULL, lease_expires_at = NULL,
    ready_at = now() + make_interval(secs => @delay_seconds::float8),
    attempts_used = attempts_used + @charge::int, updated_at = now()
WHERE id = @id;

-- name: RunFinish :one
UPDATE run
SET status = @status, error = sqlc.narg('error'), usage = coalesce(sqlc.narg('usage'), usage),
    attempts_used = attempts_used + @charge::int,
    lease_attempt_id = NULL, lease_worker = NULL, lease_expires_at = NULL,
    finished_at = now(), updated_at = now()
WHERE id = @id AND finished_at IS NULL
RETURNING *;

-- name: RunRequestCancel :one
UPDATE run SET cancel_requested_at = coalesce(cancel_requested_at, now()), updated_at = now()
WHERE id = @id
RETURNING *;

-- AttemptEnd records how an attempt ended and, in the same statement,
-- queues the deletion of the checkpoint objects it wrote or may have
-- written (written_keys), all but the run's current checkpoint: a
-- checkpoint_cleanup delivery due after cleanup_delay_seconds, and the
-- senders woken. The run's row is locked by the caller.
-- name: AttemptEnd :exec
WITH ended AS (
    UPDATE run_attempt
    SET status = @status, charged = @charged, to_step = @to_step, error = sqlc.narg('error'), ended_at = now()
    WHERE run_attempt.id = @id AND run_attempt.status = 'running'
    RETURNING run_attempt.run_id, run_attempt.workspace_id
), stray AS (
    SELECT ended.workspace_id, jsonb_agg(k.key ORDER BY k.key) AS keys
    FROM ended JOIN run ON run.id = ended.run_id, unnest(@written_keys::text[]) AS k(key)
    WHERE k.key IS DISTINCT FROM run.checkpoint_key
    GROUP BY ended.workspace_id
), cleanup AS (
    INSERT INTO outbox (id, kind, workspace_id, payload, next_attempt_at)
    SELECT @cleanup_id, 'checkpoint_cleanup', stray.workspace_id, jsonb_build_object('keys', stray.keys),
        now() + make_interval(secs => @cleanup_delay_seconds::float8)
    FROM stray
    RETURNING kind
)
SELECT pg_notify('svc_outbox', cleanup.kind) FROM cleanup;

-- name: AttemptList :many
SELECT * FROM run_attempt WHERE run_id = @run_id ORDER BY number;

-- RunExpiredLeases locks up to page_limit runs whose lease ran out.
-- name: RunExpiredLeases :many
SELECT r.* FROM run r
WHERE r.lease_expires_at < now()
ORDER BY r.lease_expires_at
LIMIT @page_limit
FOR UPDATE OF r SKIP LOCKED;

-- name: MessageAppend :exec
WITH bump AS (
    UPDATE thread SET message_count = message_count + cardinality(@roles::text[]), updated_at = now()
    WHERE id = @thread_id
    RETURNING message_count
), m AS (
    SELECT unnest(@roles::text[]) AS role, unnest(@contents::text[]) AS content,
        unnest(@tool_calls::jsonb[]) AS tool_calls, unnest(@tool_call_ids::text[]) AS tool_call_id,
        unnest(@is_errors::boolean[]) AS is_error, unnest(@ords::int[]) AS ord
)
INSERT INTO thread_message (thread_id, position, workspace_id, run_id, role, content, tool_calls, tool_call_id, is_error)
SELECT @thread_id, bump.message_count - cardinality(@roles::text[]) + m.ord, @workspace_id, sqlc.narg('run_id'),
    m.role, m.content, m.tool_calls, nullif(m.tool_call_id, ''), m.is_error
FROM bump, m;

-- name: MessageList :many
SELECT * FROM thread_message
WHERE thread_id = @thread_id AND position > @after_position
ORDER BY position
LIMIT @page_limit;

-- MessageHistory is the thread's whole conversation, oldest first: what a
-- run that has no checkpoint yet starts from (its input is the last message).
-- name: MessageHistory :many
SELECT * FROM thread_message
WHERE thread_id = @thread_id
ORDER BY position;

-- EventAppend writes events of a thread with the next sequence numbers,
-- taken from thread.last_seq in this transaction, and answers them.
-- name: EventAppend :many
WITH bump AS (
    UPDATE thread SET last_seq = last_seq + cardinality(@types::text[])
    WHERE id = @thread_id
    RETURNING last_seq
), e AS (
    SELECT unnest(@types::text[]) AS type, unnest(@data::jsonb[]) AS data, unnest(@ords::int[]) AS ord
)
INSERT INTO thread_event (thread_id, seq, workspace_id, run_id, type, data)
SELECT @thread_id, bump.last_seq - cardinality(@types::text[]) + e.ord, @workspace_id, sqlc.narg('run_id'), e.type, e.data
FROM bump, e
RETURNING *;

-- name: EventList :many
SELECT * FROM thread_event
WHERE thread_id = @thread_id AND seq > @after_seq
ORDER BY seq
LIMIT @page_limit;

-- RunNotify wakes the workers listening on svc_runs when the transaction commits.
-- name: RunNotify :exec
SELECT pg_notify('svc_runs', '');

-- name: InputCancel :exec
UPDATE thread_input SET status = 'cancelled' WHERE id = @id AND status = 'queued';

-- RunCancelNotify tells the worker holding run id that a cancel was asked for.
-- name: RunCancelNotify :exec
SELECT pg_notify('svc_run_cancel', @id::text);

-- name: RunChildOfCall :one
SELECT * FROM run WHERE parent_run_id = @parent_run_id AND parent_call_id = @parent_call_id;

-- RunSuspend gives up the attempt's hold on a run that waits for its
-- children's results or for a person's decision on its calls: it is
-- claimable again once every call in waiting_calls has a result or a
-- decision (at once, if they all arrived already). status is running
-- (waiting for children) or waiting (for a person, here or below).
-- name: RunSuspend :exec
UPDATE run r
SET lease_attempt_id = NULL, lease_worker = NULL, lease_expires_at = NULL, waiting_calls = @calls::text[],
    status = @status::text,
    waiting_since = CASE WHEN @status::text = 'waiting' THEN coalesce(r.waiting_since, now()) ELSE NULL END,
    ready_at = CASE WHEN NOT EXISTS (
            SELECT 1 FROM unnest(@calls::text[]) AS c(id)
            WHERE NOT EXISTS (SELECT 1 FROM run_call_result x WHERE x.run_id = r.id AND x.call_id = c.id)
                AND NOT EXISTS (SELECT 1 FROM run_approval p WHERE p.run_id = r.id AND p.call_id = c.id
                    AND p.status IN ('approved', 'denied', 'expired')))
        THEN now() ELSE '9999-12-31T00:00:00Z'::timestamptz END,
    updated_at = now()
WHERE r.id = @id;

-- name: CallResultInsert :exec
INSERT INTO run_call_result (run_id, call_id, child_run_id, content, is_error)
VALUES (@run_id, @call_id, sqlc.narg('child_run_id'), @content, @is_error)
ON CONFLICT (run_id, call_id) DO NOTHING;

-- RunWakeIfAnswered makes a waiting run claimable once all its waited calls
-- have results or decisions; it answers whether it did.
-- name: RunWakeIfAnswered :execrows
UPDATE run r SET ready_at = now(), updated_at = now()
WHERE r.id = @id AND r.finished_at IS NULL AND r.lease_expires_at IS NULL AND r.ready_at = '9999-12-31T00:00:00Z'::timestamptz
    AND NOT EXISTS (
        SELECT 1 FROM unnest(r.waiting_calls) AS c(id)
        WHERE NOT EXISTS (SELECT 1 FROM run_call_result x WHERE x.run_id = r.id AND x.call_id = c.id)
            AND NOT EXISTS (SELECT 1 FROM run_approval p WHERE p.run_id = r.id AND p.call_id = c.id
                AND p.status IN ('approved', 'denied', 'expired')));

-- name: CallResults :many
SELECT * FROM run_call_result WHERE run_id = @run_id AND call_id = ANY(@call_ids::text[]);

-- LastAssistantText is the text of a run's last assistant message.
-- name: LastAssistantText :one
SELECT content FROM thread_message
WHERE run_id = @run_id AND role = 'assistant'
ORDER BY position DESC
LIMIT 1;

-- name: RunUnfinishedChildren :many
SELECT * FROM run WHERE parent_run_id = @parent_run_id AND finished_at IS NULL FOR UPDATE;
