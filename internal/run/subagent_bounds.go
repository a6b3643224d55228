package run

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/svcdev/svc/gen/db"
)

// SubagentLimits bound the delegation of one root run's tree: a run started
// through the API is a root, at depth 0; a child is one deeper than its
// parent and belongs to its parent's root
// (docs/decisions/0037-delegation-bounds-run-deadline-and-stray-checkpoints.md).
type SubagentLimits struct {
	// MaxDepth is the deepest a child may be (worker.subagent_max_depth).
	MaxDepth int
	// MaxLive is how many of a root's descendants may be unfinished at once
	// (worker.subagent_max_live_children).
	MaxLive int
	// MaxTotal is how many descendants a root may ever have
	// (worker.subagent_max_descendants).
	MaxTotal int
}

// treeOf answers the root of parent's tree and the depth of a child of it.
func treeOf(parent db.Run) (root string, depth int32) {
	if parent.RootRunID != nil {
		return *parent.RootRunID, parent.Depth + 1
	}
	return parent.ID, parent.Depth + 1
}

// admitChild checks, in tx, that parent may start one more child within
// lim, and holds the tree's lock until tx ends, so no other start in the
// same tree takes the slot this one counted on. A child beyond a limit is
// refused (ChildRefused, naming the limit and its configuration key); the
// parent's model is told and nothing is written.
func (s *Service) admitChild(ctx context.Context, tx pgx.Tx, parent db.Run, lim SubagentLimits) error {
	root, depth := treeOf(parent)
	if int(depth) > lim.MaxDepth {
		return &ChildRefused{Reason: fmt.Sprintf("delegation is limited to a depth of %d (worker.subagent_max_depth) and this run is at depth %d; do the task yourself",
			lim.MaxDepth, parent.Depth)}
	}
	if err := s.q.SubagentTreeLock(ctx, tx, root); err != nil {
		return fmt.Errorf("lock the subagent tree of %s: %w", root, err)
	}
	n, err := s.q.SubagentTreeCounts(ctx, tx, &root)
	if err != nil {
		return fmt.Errorf("count the subagent runs of %s: %w", root, err)
	}
	switch {
	case int(n.Total) >= lim.MaxTotal:
		return &ChildRefused{Reason: fmt.Sprintf("the run %s already delegated %d tasks, its limit (worker.subagent_max_descendants); do the task yourself",
			root, n.Total)}
	case int(n.Live) >= lim.MaxLive:
		return &ChildRefused{Reason: fmt.Sprintf("%d subagent runs of the run %s are unfinished, the most there may be at once (worker.subagent_max_live_children); wait for their answers before delegating more",
			n.Live, root)}
	}
	return nil
}
