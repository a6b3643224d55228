// Package outbox is the transactional outbox: deliveries are written in the same
// transaction as the change that causes them, and delivered at least once by the
// deliver_outbox sweep.
package outbox

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/id"
)

// Kinds of deliveries.
const (
	KindWebhook              = "webhook"
	KindIdentityMail         = "identity_mail"
	KindSubagentResult       = "subagent_result"
	KindMemoryNamespacePurge = "memory_namespace_purge"
	KindCheckpointCleanup    = "checkpoint_cleanup"
)

// Delivery is a delivery to enqueue.
type Delivery struct {
	Kind        string
	WorkspaceID string
	Payload     any
	// Sealed holds the delivery's secrets (a mailed token, say), sealed with the
	// key ring; the payload itself is stored in clear.
	Sealed []byte
}

// Enqueue writes d in tx and returns its id.
func Enqueue(ctx context.Context, tx db.DBTX, d Delivery) (string, error) {
	payload, err := json.Marshal(d.Payload)
	if err != nil {
		return "", fmt.Errorf("encode %s delivery: %w", d.Kind, err)
	}
	dlv := id.New(id.Delivery)
	var ws *string
	if d.WorkspaceID != "" {
		ws = &d.WorkspaceID
	}
	if err := db.New().OutboxInsert(ctx, tx, db.OutboxInsertParams{ID: dlv, Kind: d.Kind, WorkspaceID: ws, Payload: payload, Sealed: d.Sealed}); err != nil {
		return "", fmt.Errorf("enqueue %s delivery: %w", d.Kind, err)
	}
	return dlv, nil
}
