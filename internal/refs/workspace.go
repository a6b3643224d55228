package refs

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/connection"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/provider"
	"github.com/svcdev/svc/internal/provider/types"
)

// Workspace checks references against the workspace's own resources, in the
// publishing transaction. Each resource is locked FOR SHARE, so a concurrent
// disable or delete is either seen or waits until the revision is written.
// Skill packages are still refused as absent: assets do not exist in this
// build.
type Workspace struct {
	None
	Types       *types.Registry
	Connections *connection.Service
}

var _ External = Workspace{}

// EnvironmentTemplate implements External: the template must be enabled and
// its environment provider too.
func (w Workspace) EnvironmentTemplate(ctx context.Context, tx pgx.Tx, workspaceID, templateID, field string) error {
	row, err := db.New().EnvironmentTemplateForUse(ctx, tx, db.EnvironmentTemplateForUseParams{WorkspaceID: workspaceID, ID: templateID})
	if err != nil {
		return notFoundOr(dbx.Translate(err, "environment template"), field, "no environment template with this id in the workspace")
	}
	if !row.Enabled {
		return Disabled(field, "the environment template is disabled")
	}
	if _, err := provider.ForUse(ctx, tx, w.Types, workspaceID, row.ProviderID, types.KindEnvironment, field); err != nil {
		if apperr.KindOf(err) == apperr.KindDisabled {
			return Disabled(field, "the environment template's provider is disabled")
		}
		return err
	}
	return nil
}

// Memory implements External: a record memory's provider must be enabled.
func (w Workspace) Memory(ctx context.Context, tx pgx.Tx, workspaceID, memoryID, field string) error {
	row, err := db.New().MemoryForUse(ctx, tx, db.MemoryForUseParams{WorkspaceID: workspaceID, ID: memoryID})
	if err != nil {
		return notFoundOr(dbx.Translate(err, "memory"), field, "no memory with this id in the workspace")
	}
	if row.ProviderID == nil {
		return nil // a builtin memory lives in the database
	}
	if _, err := provider.ForUse(ctx, tx, w.Types, workspaceID, *row.ProviderID, types.KindMemory, field); err != nil {
		if apperr.KindOf(err) == apperr.KindDisabled {
			return Disabled(field, "the memory's provider is disabled")
		}
		return err
	}
	return nil
}

// Connection implements External: the connection and its connector provider
// must be enabled. Action names are not checked against the connector: its
// catalogue is the vendor's and changes without svc; a run reports an action
// the vendor does not offer.
func (w Workspace) Connection(ctx context.Context, tx pgx.Tx, workspaceID, connectionID string, _ []string, field, _ string) error {
	_, err := w.Connections.UsableTx(ctx, tx, workspaceID, field, connectionID)
	return err
}

// notFoundOr turns a not-found error into NotFound naming field.
func notFoundOr(err error, field, reason string) error {
	if apperr.KindOf(err) == apperr.KindNotFound {
		return NotFound(field, reason)
	}
	return err
}
