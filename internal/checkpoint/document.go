package checkpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/svcdev/svc/internal/objectstore"
)

// MaxBytes bounds a checkpoint object as Load reads it.
const MaxBytes = 64 << 20

// Document is a checkpoint object: the state S of a run's agent loop after a
// step, with the run and the attempt that wrote it.
type Document[S any] struct {
	Version int    `json:"version"`
	RunID   string `json:"run_id"`
	Attempt int32  `json:"attempt"`
	State   S      `json:"state"`
}

// Save writes state as the checkpoint attempt number attempt of run runID
// (of workspace workspaceID) writes after its step-th step, and answers the
// object's key. The key names the attempt (AttemptName), so an attempt that
// lost its lease never overwrites an object its successor recorded. A write
// that failed answers the key too (the object may exist all the same); ""
// when nothing was written.
func Save[S any](ctx context.Context, store objectstore.Store, workspaceID, runID string, attempt, step int32, state S) (string, error) {
	key, err := Key(workspaceID, runID, AttemptName(attempt, step))
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(Document[S]{Version: 1, RunID: runID, Attempt: attempt, State: state})
	if err != nil {
		return "", fmt.Errorf("encode checkpoint: %w", err)
	}
	if _, err := store.Put(ctx, key, bytes.NewReader(b), int64(len(b)), objectstore.PutOptions{ContentType: "application/json"}); err != nil {
		return key, fmt.Errorf("write checkpoint: %w", err)
	}
	return key, nil
}

// Load reads the state of checkpoint object key, which must be one of run
// runID's (at most MaxBytes of it are read).
func Load[S any](ctx context.Context, store objectstore.Store, key, runID string) (S, error) {
	var zero S
	rd, err := store.Get(ctx, key, 0, -1)
	if err != nil {
		return zero, fmt.Errorf("read checkpoint %s: %w", key, err)
	}
	defer func() { _ = rd.Close() }()
	var doc Document[S]
	if err := json.NewDecoder(io.LimitReader(rd, MaxBytes)).Decode(&doc); err != nil {
		return zero, fmt.Errorf("decode checkpoint %s: %w", key, err)
	}
	if doc.RunID != runID {
		return zero, fmt.Errorf("checkpoint %s belongs to run %s", key, doc.RunID)
	}
	return doc.State, nil
}
