// Package checkpoint writes and reads run checkpoints (Save, Load: a
// Document holding the agent loop's state after a step), names them in the
// object store, and cleans up the ones a newer checkpoint replaced.
//
// A checkpoint object's key is
//
//	ws/<workspace_id>/runs/<run_id>/checkpoints/<name>
//
// (Key builds it; AttemptName makes <name>). An attempt writes its steps'
// checkpoints under two names, each step over the one of two steps before,
// so recording a step replaces nothing that needs deleting. What an attempt
// leaves besides the run's current checkpoint (its other name, and a
// checkpoint no commit recorded) is queued for deletion by the statement
// that ends the attempt (AttemptEnd in sql/queries/run.sql), as is the
// previous attempt's checkpoint by the step commit that replaces it
// (RunCommitStep); EnqueueCleanup queues the same delivery in a
// transaction. The outbox then deletes the objects at least once (Cleaner,
// kind checkpoint_cleanup;
// docs/decisions/0037-delegation-bounds-run-deadline-and-stray-checkpoints.md,
// docs/decisions/0062-two-checkpoint-names-per-attempt.md).
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
// writes after its step-th step (Key's name). An attempt has two names, one
// for its even steps and one for its odd ones, and writes each step's
// checkpoint over the one of two steps before:
//
//   - an attempt never writes over another attempt's object, so one that
//     lost its lease cannot touch what its successor reads or records;
//   - it writes a step's object only once the step before is recorded, so
//     the object it writes over is never the run's current checkpoint, and
//     the one it replaces needs no deletion of its own: a step queues none
//     (RunCommitStep), and the attempt's end queues one for the other name
//     (AttemptKeys);
//   - its end can name everything it may have left (AttemptStrays).
//
// docs/decisions/0062-two-checkpoint-names-per-attempt.md has the reasoning.
func AttemptName(attempt, step int32) string {
	return fmt.Sprintf("a%04d-slot%d.json", attempt, step&1)
}

// AttemptKeys are the keys of both checkpoints attempt number attempt of run
// runID writes (AttemptName), the even step's first.
func AttemptKeys(workspaceID, runID string, attempt int32) ([]string, error) {
	out := make([]string, 0, 2)
	for step := range int32(2) {
		k, err := Key(workspaceID, runID, AttemptName(attempt, step))
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}

// AttemptStrays are the keys of the checkpoints attempt number attempt of run
// runID may have left, when the run had recorded step steps as it ended:
// both of its names (AttemptKeys), and the per-step names (a0002-s000005.json)
// of steps step and step + 1 that a worker of an older version writes,
// should one have run the attempt during a rolling upgrade. One of them may
// be the run's current checkpoint, which the cleanup spares; a name never
// written costs the cleanup one deletion of a missing object.
func AttemptStrays(workspaceID, runID string, attempt, step int32) ([]string, error) {
	out, err := AttemptKeys(workspaceID, runID, attempt)
	if err != nil {
		return nil, err
	}
	for _, s := range []int32{step, step + 1} {
		k, err := Key(workspaceID, runID, fmt.Sprintf("a%04d-s%06d.json", attempt, s))
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}
