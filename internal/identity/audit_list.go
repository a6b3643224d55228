package identity

import (
	"context"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/resource"
)

func auditEventOf(r db.AuditEvent) AuditEvent {
	return AuditEvent{
		ID: r.ID, ActorID: r.ActorID, Action: r.Action, SubjectType: r.SubjectType, SubjectID: r.SubjectID,
		Version: r.Version, ChangedFields: r.ChangedFields, RequestID: r.RequestID, CreatedAt: r.CreatedAt,
	}
}

// ListAuditEvents lists the audit trail of the caller's workspace, newest first.
func (s *Service) ListAuditEvents(ctx context.Context, c *auth.Caller, in PageInput) (Page[AuditEvent], error) {
	if err := auth.Require(c, auth.PermAdmin); err != nil {
		return Page[AuditEvent]{}, err
	}
	p, err := in.parse()
	if err != nil {
		return Page[AuditEvent]{}, err
	}
	rows, err := s.q.AuditEventListByWorkspace(ctx, s.pool, db.AuditEventListByWorkspaceParams{
		WorkspaceID: &c.WorkspaceID, AfterID: p.afterID, PageLimit: int32(p.limit),
	})
	if err != nil {
		return Page[AuditEvent]{}, dbx.Translate(err, "audit event")
	}
	return resource.PageOf(rows, p.limit, auditEventOf, func(r db.AuditEvent) string { return r.ID }), nil
}
