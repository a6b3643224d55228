package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/objectstore"
	"github.com/svcdev/svc/internal/outbox"
)

// MaxCleanupKeys is the most keys one checkpoint_cleanup delivery carries;
// EnqueueCleanup splits longer lists. One attempt deletes them one by one
// well within the default lease (docs/performance.md).
const MaxCleanupKeys = 100

// CleanupPayload is the payload of a checkpoint_cleanup delivery: the keys of
// the replaced checkpoint objects to delete.
type CleanupPayload struct {
	Keys []string `json:"keys"`
}

// EnqueueCleanup queues, in tx, the deletion of the replaced checkpoint
// objects keys of workspace workspaceID: one checkpoint_cleanup delivery per
// MaxCleanupKeys keys. Every key must be a checkpoint key of the workspace
// (CheckKey); duplicates are dropped. No keys queue nothing.
func EnqueueCleanup(ctx context.Context, tx db.DBTX, workspaceID string, keys []string) error {
	keys = slices.Compact(slices.Sorted(slices.Values(keys)))
	for _, k := range keys {
		if err := CheckKey(workspaceID, k); err != nil {
			return fmt.Errorf("enqueue checkpoint cleanup: %w", err)
		}
	}
	for chunk := range slices.Chunk(keys, MaxCleanupKeys) {
		_, err := outbox.Enqueue(ctx, tx, outbox.Delivery{
			Kind: outbox.KindCheckpointCleanup, WorkspaceID: workspaceID, Payload: CleanupPayload{Keys: chunk},
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Cleaner delivers checkpoint_cleanup: it deletes the delivery's keys from
// the object store. A missing object counts as deleted, so a repeated
// delivery is harmless. A payload holding any key that is not a checkpoint
// key of the delivery's workspace is refused whole, before anything is
// deleted, as permanent; a store failure is retried, and the retry deletes
// again what is left.
type Cleaner struct {
	store objectstore.Store
}

var _ outbox.Deliverer = (*Cleaner)(nil)

// NewCleaner returns the checkpoint_cleanup deliverer deleting from store.
func NewCleaner(store objectstore.Store) *Cleaner { return &Cleaner{store: store} }

// Deliver deletes the delivery's checkpoint objects.
func (c *Cleaner) Deliver(ctx context.Context, d outbox.Claimed) outbox.Outcome {
	keys, err := cleanupKeys(d)
	if err != nil {
		return outbox.Permanent(err)
	}
	for i, k := range keys {
		if err := c.store.Delete(ctx, k); err != nil {
			if ctx.Err() != nil {
				return outbox.Failed(ctx.Err())
			}
			return outbox.Failed(fmt.Errorf("delete checkpoint %d of %d: %w", i+1, len(keys), err))
		}
	}
	return outbox.Delivered()
}

// cleanupKeys reads and checks the payload.
func cleanupKeys(d outbox.Claimed) ([]string, error) {
	var p CleanupPayload
	if err := json.Unmarshal(d.Payload, &p); err != nil {
		return nil, fmt.Errorf("the payload is not a checkpoint cleanup: %w", err)
	}
	if len(p.Keys) == 0 {
		return nil, errors.New("the payload names no checkpoint keys")
	}
	for _, k := range p.Keys {
		if err := CheckKey(d.WorkspaceID, k); err != nil {
			return nil, fmt.Errorf("refusing the whole cleanup: %w", err)
		}
	}
	return p.Keys, nil
}
