// Package checkpoint writes and reads run checkpoints (Save, Load: a
// Document holding the agent loop's state after a step), names them in the
// object store, and cleans up the ones a newer checkpoint replaced.
//
// A checkpoint object's key is
//
//	ws/<workspace_id>/runs/<run_id>/checkpoints/<name>
//
// (Key builds it; <name> is one key segment of the runs issue's choosing).
// When a run records a checkpoint that replaces older ones, the same write
// queues their deletion: EnqueueCleanup in a transaction, or, for the runs
// engine's one-statement step commit (RunCommitStep in sql/queries/run.sql),
// a delivery of the same payload written by that statement. The outbox then
// deletes the replaced objects at least once (Cleaner, kind
// checkpoint_cleanup). A checkpoint an attempt wrote but no commit recorded
// is named the same way by the statement that ends the attempt
// (AttemptStrays; docs/decisions/0037-delegation-bounds-run-deadline-and-stray-checkpoints.md).
// The cleaner deletes nothing but checkpoint keys of the
// delivery's own workspace, so a corrupt outbox row cannot delete an asset, a
// skill package or another workspace's objects
// (docs/decisions/0024-namespace-purge-and-checkpoint-cleanup.md).
package checkpoint

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/svcdev/svc/internal/objectstore"
)

// runIDPattern is a run id: the run_ prefix and a lowercase ULID.
var runIDPattern = regexp.MustCompile(`^run_[0-9a-z]{26}$`)

// Key returns the object key of the checkpoint name of run runID in workspace
// workspaceID. It fails when the result is not a checkpoint key: a run id of
// another shape, or a name that is not one key segment.
func Key(workspaceID, runID, name string) (string, error) {
	key, err := objectstore.Key(workspaceID, "runs", runID, "checkpoints", name)
	if err != nil {
		return "", fmt.Errorf("checkpoint key: %w", err)
	}
	if err := CheckKey(workspaceID, key); err != nil {
		return "", err
	}
	return key, nil
}

// CheckKey accepts exactly the checkpoint keys of workspace workspaceID, as
// Key makes them. Everything else fails, naming the key.
func CheckKey(workspaceID, key string) error {
	if err := objectstore.ValidateKey(key); err != nil {
		return fmt.Errorf("%q is not a checkpoint key: %w", key, err)
	}
	parts := strings.Split(key, "/")
	switch {
	case len(parts) != 6 || parts[2] != "runs" || parts[4] != "checkpoints":
		return fmt.Errorf("%q is not a checkpoint key: want ws/<workspace_id>/runs/<run_id>/checkpoints/<name>", key)
	case workspaceID == "" || parts[1] != workspaceID:
		return fmt.Errorf("%q is not a checkpoint key of workspace %q", key, workspaceID)
	case !runIDPattern.MatchString(parts[3]):
		return fmt.Errorf("%q is not a checkpoint key: %q is not a run id", key, parts[3])
	}
	return nil
}

// AttemptName is the name of the checkpoint attempt number attempt of a run
// writes after its step-th step (Key's name): an attempt never writes over
// another's object, and its end can name what it may have left.
func AttemptName(attempt, step int32) string {
	return fmt.Sprintf("a%04d-s%06d.json", attempt, step)
}

// AttemptStrays are the keys of the checkpoints attempt number attempt of run
// runID may have written without recording them, when the run had recorded
// step steps as it ended: a step that records the answers a waiting run got
// writes the checkpoint of the step it resumes (step), any other the next
// one (step + 1); an attempt writes no further object until that one is
// recorded. One of them may be the run's current checkpoint, which the
// cleanup spares.
func AttemptStrays(workspaceID, runID string, attempt, step int32) ([]string, error) {
	out := make([]string, 0, 2)
	for _, s := range []int32{step, step + 1} {
		k, err := Key(workspaceID, runID, AttemptName(attempt, s))
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}
