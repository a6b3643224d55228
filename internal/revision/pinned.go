package revision

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/svcdev/svc/gen/db"
)

// Pin is a revision a run pinned: a head and one of its revisions.
type Pin struct {
	HeadID     string
	RevisionID string
}

// Pinned is a pinned revision's configuration with its head's name, as a
// run reads it.
type Pinned[C any] struct {
	HeadID     string
	Name       string
	RevisionID string
	Config     C
}

// Pinned reads the revisions pins name, heads of this kind in the workspace,
// in one read, and answers them in the order of pins: what an attempt reads
// of the agent and the skills its run pinned. A revision that is absent or
// not its head's is an error of svc's (a run pins only revisions that
// exist, and revisions are never deleted).
func (s *Service[C]) Pinned(ctx context.Context, workspaceID string, pins []Pin) ([]Pinned[C], error) {
	if len(pins) == 0 {
		return nil, nil
	}
	ids := make([]string, len(pins))
	for i, p := range pins {
		ids[i] = p.RevisionID
	}
	rows, err := s.q.RevisionsPinned(ctx, s.pool, db.RevisionsPinnedParams{WorkspaceID: workspaceID, Kind: string(s.kind), Ids: ids})
	if err != nil {
		return nil, fmt.Errorf("read %s revisions: %w", s.kind, err)
	}
	byID := make(map[string]db.RevisionsPinnedRow, len(rows))
	for _, r := range rows {
		byID[r.ID] = r
	}
	out := make([]Pinned[C], len(pins))
	for i, p := range pins {
		r, ok := byID[p.RevisionID]
		if !ok || r.HeadID != p.HeadID {
			return nil, fmt.Errorf("read %s revision %s of %s: not found", s.kind, p.RevisionID, p.HeadID)
		}
		out[i] = Pinned[C]{HeadID: r.HeadID, Name: r.Name, RevisionID: r.ID}
		if err := json.Unmarshal(r.Config, &out[i].Config); err != nil {
			return nil, fmt.Errorf("decode %s revision %s: %w", s.kind, r.ID, err)
		}
	}
	return out, nil
}

// Heads reads the heads of this kind among ids in the workspace, archived or
// not, in one read; ids that name none are absent from the answer.
func (s *Service[C]) Heads(ctx context.Context, workspaceID string, ids []string) (map[string]Head, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := s.q.HeadsByID(ctx, s.pool, db.HeadsByIDParams{WorkspaceID: workspaceID, Kind: string(s.kind), Ids: ids})
	if err != nil {
		return nil, fmt.Errorf("read %ss: %w", s.kind, err)
	}
	out := make(map[string]Head, len(rows))
	for _, r := range rows {
		h, err := headOf(r)
		if err != nil {
			return nil, err
		}
		out[h.ID] = h
	}
	return out, nil
}
