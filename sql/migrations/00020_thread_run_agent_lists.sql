-- +goose Up
-- The lists of threads and runs filtered by agent (GET /api/v1/threads and
-- /api/v1/runs with agent_id) read these newest first within the agent.
CREATE INDEX thread_agent_idx ON thread (workspace_id, agent_id, id DESC);
CREATE INDEX run_agent_idx ON run (workspace_id, agent_id, id DESC);

-- +goose Down
DROP INDEX run_agent_idx;
DROP INDEX thread_agent_idx;
