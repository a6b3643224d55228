-- name: SweepClaim :one
-- Takes the sweep's claim for lease_seconds when it is free, expired, or already ours.
-- No row comes back when another replica holds a current claim.
INSERT INTO sweep_claim (name, owner, claimed_at, expires_at)
VALUES (@name, @owner, now(), now() + make_interval(secs => @lease_seconds::float8))
ON CONFLICT (name) DO UPDATE
    SET owner = excluded.owner,
        claimed_at = excluded.claimed_at,
        expires_at = excluded.expires_at
    WHERE sweep_claim.expires_at <= now() OR sweep_claim.owner = excluded.owner
RETURNING name, owner, claimed_at, expires_at;

-- name: SweepFinish :exec
-- Records the outcome of a pass. The claim itself stays until it expires, so no
-- other replica repeats the sweep within the same interval.
UPDATE sweep_claim
SET last_finished_at = now(), last_error = sqlc.narg('last_error')
WHERE name = @name AND owner = @owner;

-- name: SweepGet :one
SELECT name, owner, claimed_at, expires_at, last_finished_at, last_error
FROM sweep_claim
WHERE name = @name;
