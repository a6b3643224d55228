-- +goose Up
-- The thread event type `error` is named `run.error`: an SSE event named
-- `error` collides with the EventSource's own `error` event. Stored events
-- read under the name the contract gives them.
UPDATE thread_event SET type = 'run.error' WHERE type = 'error';

-- +goose Down
UPDATE thread_event SET type = 'error' WHERE type = 'run.error';
