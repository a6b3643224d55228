package worker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/llm/llmtest"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/worker"
)

// TestUnusableModelFailsAcceptedRun: a run whose model, or the model's
// provider, was disabled after the run was accepted fails at its attempt
// with the code disabled, and its model is never called.
func TestUnusableModelFailsAcceptedRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, disable, message string
	}{
		{"model", `UPDATE model SET enabled = false WHERE key = 'main'`, `the model "main" is disabled`},
		{"provider", `UPDATE provider SET enabled = false WHERE kind = 'model'`, `the provider of model "main" is disabled`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, []llmtest.Turn{{Text: "never said"}}, 3)
			r, err := b.runs.Start(t.Context(), b.caller, run.StartInput{AgentID: b.agentID, Input: "hi"})
			require.NoError(t, err)
			_, err = b.pool.Exec(t.Context(), tc.disable)
			require.NoError(t, err)

			b.runWorker(t, worker.ExecutorDeps{Objects: b.store})
			got := b.waitRun(t, r.ID, 10*time.Second)
			require.Equal(t, run.StatusFailed, got.Status)
			require.Equal(t, &run.Failure{Code: run.ErrCodeDisabled, Message: tc.message}, got.Error)
			require.EqualValues(t, 1, got.AttemptsUsed, "the run failed at once, without retries")
			require.Empty(t, b.model.Requests())
		})
	}
}
