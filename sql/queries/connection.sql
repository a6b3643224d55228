-- name: ConnectionInsert :one
INSERT INTO connection (id, workspace_id, provider_id, app, account, name, config, credential, enabled,
                        created_by_id, updated_by_id)
VALUES (@id, @workspace_id, @provider_id, @app, sqlc.narg('account'), @name, @config, @credential, @enabled,
        @created_by_id, @created_by_id)
RETURNING *;

-- name: ConnectionGet :one
SELECT * FROM connection WHERE workspace_id = @workspace_id AND id = @id;

-- name: ConnectionGetForUpdate :one
-- NO KEY UPDATE: serializes writers of the row without blocking the operations
-- that reference it, which take KEY SHARE.
SELECT * FROM connection WHERE workspace_id = @workspace_id AND id = @id
FOR NO KEY UPDATE;

-- name: ConnectionGetForShare :one
-- A use of the connection: FOR SHARE conflicts with the connection's PATCH and
-- revoke (FOR NO KEY UPDATE), so a concurrent disable is either seen or waits
-- until the caller's transaction ends.
SELECT * FROM connection WHERE workspace_id = @workspace_id AND id = @id
FOR SHARE;

-- name: ConnectionList :many
SELECT * FROM connection
WHERE workspace_id = @workspace_id AND id < @after_id
ORDER BY id DESC
LIMIT @page_limit;

-- name: ConnectionUpdate :one
UPDATE connection
SET name = @name, config = @config, credential = @credential, account = sqlc.narg('account'), enabled = @enabled,
    updated_by_id = @updated_by_id, version = version + 1, updated_at = now()
WHERE id = @id
RETURNING *;

-- name: ConnectionProviderForShare :one
-- The connector provider a connection is made or used through, locked FOR SHARE
-- like a model's provider, so a concurrent disable is either seen or waits.
SELECT id, kind, type, enabled, config, credential FROM provider
WHERE workspace_id = @workspace_id AND id = @id
FOR SHARE;

-- name: ConnectionOperationInsert :one
INSERT INTO connection_operation (id, workspace_id, connection_id, owner, lease_until, deadline, created_by_id)
VALUES (@id, @workspace_id, @connection_id, @owner,
        now() + make_interval(secs => @lease_seconds::float8),
        now() + make_interval(secs => @ttl_seconds::float8),
        @created_by_id)
RETURNING *;

-- name: ConnectionOperationGet :one
SELECT * FROM connection_operation WHERE workspace_id = @workspace_id AND id = @id;

-- name: ConnectionOperationGetForUpdate :one
SELECT * FROM connection_operation WHERE id = @id
FOR UPDATE;

-- name: ConnectionOperationFailPending :many
-- Settles the pending operation of a connection as failed (superseded by a new
-- one, or cut short by a revoke).
UPDATE connection_operation
SET status = 'failed', error = @error, settled_at = now(), updated_at = now(), version = version + 1
WHERE connection_id = @connection_id AND status = 'pending'
RETURNING *;

-- name: ConnectionOperationBegun :one
-- Records where the user goes and the vendor's state, if the operation is
-- still pending; no row when it was settled meanwhile.
UPDATE connection_operation
SET redirect_url = @redirect_url, vendor_state = @vendor_state, updated_at = now(), version = version + 1
WHERE id = @id AND status = 'pending'
RETURNING *;

-- name: ConnectionOperationSettle :one
-- Settles a pending operation; no row when it was settled already, so an
-- operation is settled exactly once whoever races for it.
UPDATE connection_operation
SET status = @status, error = sqlc.narg('error'), settled_at = now(), updated_at = now(), version = version + 1
WHERE id = @id AND status = 'pending'
RETURNING *;

-- name: ConnectionOperationRenew :many
-- The owner's heartbeat: extends the lease of every pending operation it owns
-- that is still within its deadline, and returns them to be driven.
UPDATE connection_operation
SET lease_until = now() + make_interval(secs => @lease_seconds::float8)
WHERE owner = @owner AND status = 'pending' AND deadline > now()
RETURNING id;

-- name: ConnectionOperationTarget :one
-- What driving an operation needs: the operation, its connection and the
-- connection's provider.
SELECT o.id, o.workspace_id, o.connection_id, o.vendor_state, o.created_by_id,
       c.config AS connection_config, c.account, c.provider_id,
       p.type AS provider_type, p.config AS provider_config, p.credential AS provider_credential,
       p.enabled AS provider_enabled
FROM connection_operation o
JOIN connection c ON c.id = o.connection_id
JOIN provider p ON p.id = c.provider_id
WHERE o.id = @id AND o.status = 'pending';

-- name: ConnectionOperationExpireDue :many
-- Expires, in one batch, the pending operations past their deadline whose owner
-- is @owner (settling its own) or, when @abandoned, has disappeared (its lease
-- lapsed). SKIP LOCKED leaves rows another pass is settling to that pass.
WITH due AS (
    SELECT id FROM connection_operation
    WHERE status = 'pending' AND deadline <= now() AND (owner = @owner::text OR (@abandoned::bool AND lease_until <= now()))
    ORDER BY deadline, id
    LIMIT @batch::int
    FOR UPDATE SKIP LOCKED
)
UPDATE connection_operation o
SET status = 'expired', error = @error::text, settled_at = now(), updated_at = now(), version = o.version + 1
FROM due
WHERE o.id = due.id
RETURNING o.*;

-- name: ConnectionOperationAdopt :many
-- Takes over, in one batch, pending operations within their deadline whose
-- owner disappeared (its lease lapsed), so this process drives them on.
WITH lapsed AS (
    SELECT id FROM connection_operation
    WHERE status = 'pending' AND lease_until <= now() AND deadline > now() AND owner <> @owner::text
    ORDER BY lease_until, id
    LIMIT @batch::int
    FOR UPDATE SKIP LOCKED
)
UPDATE connection_operation o
SET owner = @owner::text, lease_until = now() + make_interval(secs => @lease_seconds::float8),
    updated_at = now(), version = o.version + 1
FROM lapsed
WHERE o.id = lapsed.id
RETURNING o.id;

-- name: ConnectionProviderType :one
-- The type of a connection's provider (types never change).
SELECT type FROM provider WHERE id = @id;
