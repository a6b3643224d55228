package agent

import (
	"context"

	"github.com/svcdev/svc/internal/revision"
)

// RunConfig is the configuration of revision revisionID of agent agentID of
// the workspace, the revision a run pinned, as an attempt of the run reads
// it.
func (s *Service) RunConfig(ctx context.Context, workspaceID, agentID, revisionID string) (Config, error) {
	got, err := s.Pinned(ctx, workspaceID, []revision.Pin{{HeadID: agentID, RevisionID: revisionID}})
	if err != nil {
		return Config{}, err
	}
	return got[0].Config, nil
}
