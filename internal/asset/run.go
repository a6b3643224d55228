package asset

import (
	"context"
	"fmt"

	"github.com/svcdev/svc/gen/db"
)

// GetForRun reads asset assetID of the workspace for a run of the workspace
// (a skill's package to place in its environment); retired assets are
// answered too. Open reads its content.
func (s *Service) GetForRun(ctx context.Context, workspaceID, assetID string) (Asset, error) {
	row, err := s.q.AssetGet(ctx, s.pool, db.AssetGetParams{WorkspaceID: workspaceID, ID: assetID})
	if err != nil {
		return Asset{}, fmt.Errorf("read asset %s: %w", assetID, err)
	}
	return assetOf(row), nil
}
