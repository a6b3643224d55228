// Package audit records changes to resources in the audit trail, in the same
// transaction as the change.
package audit

import (
	"context"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/reqctx"
)

// Event is one change: who did what to which resource, resulting in which
// version, and the names (never values) of the fields it changed.
type Event struct {
	OrganizationID string // "" when none
	WorkspaceID    string // "" when none
	ActorID        string // principal; "" for operator commands
	Action         string // noun.verb, e.g. "workspace.updated"
	SubjectType    string
	SubjectID      string
	Version        *int32
	ChangedFields  []string
}

// Record writes e with the request id of ctx.
func Record(ctx context.Context, tx db.DBTX, e Event) error {
	fields := e.ChangedFields
	if fields == nil {
		fields = []string{}
	}
	return db.New().AuditEventInsert(ctx, tx, db.AuditEventInsertParams{
		ID:             id.New(id.AuditEvent),
		OrganizationID: nonEmpty(e.OrganizationID),
		WorkspaceID:    nonEmpty(e.WorkspaceID),
		ActorID:        nonEmpty(e.ActorID),
		Action:         e.Action,
		SubjectType:    e.SubjectType,
		SubjectID:      e.SubjectID,
		Version:        e.Version,
		ChangedFields:  fields,
		RequestID:      nonEmpty(reqctx.RequestID(ctx)),
	})
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
