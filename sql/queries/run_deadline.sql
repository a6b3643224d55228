-- A run's time limit, by the database's clock (internal/run/deadline.go).

-- RunTimeLeft answers how many seconds of a run's time limit are left by the
-- database's clock: its start (set by its first attempt's claim and kept by
-- every later one) plus timeout_seconds, less now. Negative once the time
-- is up; a run not started yet has all of it.
-- name: RunTimeLeft :one
SELECT extract(epoch FROM coalesce(started_at, now()) + make_interval(secs => @timeout_seconds::float8) - now())::float8 AS seconds_left
FROM run WHERE id = @id;
