-- +goose Up
-- Fair claims across workspaces (docs/decisions/0038-fair-claims.md).
--
-- A claim picks, in one statement, the oldest ready runs of every workspace
-- that has waiting runs, ordered by how many runs each workspace already
-- holds leases for, and leases them, records their attempts, their
-- run.status events and their run.started webhook deliveries.
--
-- run_claim_idx serves the walk over the workspaces with waiting runs (a
-- skip scan over workspace_id) and each workspace's oldest ready runs; it
-- replaces run_ready_idx, which only served one global order.
-- run_running_idx counts a workspace's leased runs (its running runs).
CREATE INDEX run_claim_idx ON run (workspace_id, ready_at) WHERE finished_at IS NULL AND lease_expires_at IS NULL;
DROP INDEX run_ready_idx;
CREATE INDEX run_running_idx ON run (workspace_id) WHERE lease_expires_at IS NOT NULL;

-- svc_id makes an id as package id does: prefix, an underscore and a
-- lowercase ULID (48 bits of milliseconds, 80 random bits, Crockford
-- base32), so rows a statement inserts (attempts, deliveries) get ids of
-- the same shape and order as the ones the application makes.
-- +goose StatementBegin
CREATE FUNCTION svc_id(prefix text) RETURNS text
LANGUAGE plpgsql VOLATILE PARALLEL SAFE AS $$
DECLARE
    alphabet constant text := '0123456789abcdefghjkmnpqrstvwxyz';
    ms bigint := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint;
    u bytea := uuid_send(gen_random_uuid());
    hi bigint;
    lo bigint;
    out text := '';
BEGIN
    -- A version 4 uuid has random bits in bytes 0-5 and 9-15: 40 bits from
    -- bytes 0-4 and 40 bits from bytes 10-14.
    hi := (get_byte(u, 0)::bigint << 32) | (get_byte(u, 1)::bigint << 24) | (get_byte(u, 2)::bigint << 16)
        | (get_byte(u, 3)::bigint << 8) | get_byte(u, 4)::bigint;
    lo := (get_byte(u, 10)::bigint << 32) | (get_byte(u, 11)::bigint << 24) | (get_byte(u, 12)::bigint << 16)
        | (get_byte(u, 13)::bigint << 8) | get_byte(u, 14)::bigint;
    FOR i IN REVERSE 9..0 LOOP
        out := out || substr(alphabet, ((ms >> (5 * i)) & 31)::int + 1, 1);
    END LOOP;
    FOR i IN REVERSE 7..0 LOOP
        out := out || substr(alphabet, ((hi >> (5 * i)) & 31)::int + 1, 1);
    END LOOP;
    FOR i IN REVERSE 7..0 LOOP
        out := out || substr(alphabet, ((lo >> (5 * i)) & 31)::int + 1, 1);
    END LOOP;
    RETURN prefix || '_' || out;
END $$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION svc_id(text);
DROP INDEX run_running_idx;
CREATE INDEX run_ready_idx ON run (ready_at) WHERE finished_at IS NULL AND lease_expires_at IS NULL;
DROP INDEX run_claim_idx;
