-- +goose Up
-- A step's messages and events are written by one fenced statement that
-- names the run and workspace of the thread it writes to; the thread's own
-- reference stays. The run and workspace references were checked row by
-- row on every step (docs/decisions/0047-gathered-claims.md).
ALTER TABLE thread_event DROP CONSTRAINT thread_event_run_id_fkey;
ALTER TABLE thread_event DROP CONSTRAINT thread_event_workspace_id_fkey;
ALTER TABLE thread_message DROP CONSTRAINT thread_message_run_id_fkey;
ALTER TABLE thread_message DROP CONSTRAINT thread_message_workspace_id_fkey;

-- +goose Down
ALTER TABLE thread_message ADD CONSTRAINT thread_message_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES workspace (id);
ALTER TABLE thread_message ADD CONSTRAINT thread_message_run_id_fkey FOREIGN KEY (run_id) REFERENCES run (id);
ALTER TABLE thread_event ADD CONSTRAINT thread_event_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES workspace (id);
ALTER TABLE thread_event ADD CONSTRAINT thread_event_run_id_fkey FOREIGN KEY (run_id) REFERENCES run (id);
