package refcheck

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/asset"
	"github.com/svcdev/svc/internal/connection"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/provider"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/skillpkg"
)

// Workspace checks references against the workspace's own resources, in the
// publishing transaction. Each resource is locked FOR SHARE, so a concurrent
// disable, retire or delete is either seen or waits until the revision is
// written.
type Workspace struct {
	Types       *catalog.Registry
	Connections *connection.Service
	Assets      *asset.Service
}

var _ External = Workspace{}

// EnvironmentTemplate implements External: the template must be enabled and
// its environment provider too.
func (w Workspace) EnvironmentTemplate(ctx context.Context, tx pgx.Tx, workspaceID, templateID, field string) error {
	row, err := db.New().EnvironmentTemplateForUse(ctx, tx, db.EnvironmentTemplateForUseParams{WorkspaceID: workspaceID, ID: templateID})
	if err != nil {
		return notFoundOr(err, field, "no environment template with this id in the workspace")
	}
	if !row.Enabled {
		return Disabled(field, "the environment template is disabled")
	}
	if _, err := provider.ForUse(ctx, tx, w.Types, workspaceID, row.ProviderID, catalog.KindEnvironment, field); err != nil {
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
		return notFoundOr(err, field, "no memory with this id in the workspace")
	}
	if row.ProviderID == nil {
		return nil // a builtin memory lives in the database
	}
	if _, err := provider.ForUse(ctx, tx, w.Types, workspaceID, *row.ProviderID, catalog.KindMemory, field); err != nil {
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

// SkillArchive implements External: the asset must be usable (not retired)
// and hold a safe skill archive within skillpkg.DefaultLimits; a refused
// archive is 400 naming field with the entry and the reason. It runs before
// the publishing transaction: it may read tens of megabytes from the object
// store, and asset content never changes.
func (w Workspace) SkillArchive(ctx context.Context, workspaceID, assetID, field string) error {
	a, err := w.Assets.Usable(ctx, nil, workspaceID, field, assetID)
	if err != nil {
		return err
	}
	lim := skillpkg.DefaultLimits
	// An archive's headers cost at most about 1.5 KiB an entry beyond its
	// content; anything larger cannot pass, so it is not read.
	if a.Size > lim.MaxBytes+int64(lim.MaxEntries)*1536 {
		return apperr.InvalidField(field, "the asset is larger than a skill package may be")
	}
	if _, err := skillpkg.Check(w.Assets.ReaderAt(ctx, a), a.Size, lim); err != nil {
		var refused *skillpkg.Error
		if errors.As(err, &refused) {
			reason := refused.Reason
			if refused.Path != "" {
				reason = fmt.Sprintf("entry %q: %s", refused.Path, refused.Reason)
			}
			return apperr.InvalidField(field, "the asset is not a safe skill package: "+reason)
		}
		return err
	}
	return nil
}

// SkillPackage implements External: in the publishing transaction the asset
// is locked FOR SHARE and must still not be retired (SkillArchive checked its
// content before).
func (w Workspace) SkillPackage(ctx context.Context, tx pgx.Tx, workspaceID, assetID, field string) error {
	_, err := w.Assets.Usable(ctx, tx, workspaceID, field, assetID)
	return err
}

// notFoundOr turns a lookup that found no row into NotFound naming field;
// other errors are left to the transaction to translate.
func notFoundOr(err error, field, reason string) error {
	if dbx.IsNotFound(err) {
		return NotFound(field, reason)
	}
	return err
}
