package run_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/run"
)

// TestStartRefusesUnusableModel: a run does not start on a model that is
// disabled, or whose provider is disabled: 409 disabled naming the model or
// its provider, and no run is written.
func TestStartRefusesUnusableModel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, disable, field string
	}{
		{"model", `UPDATE model SET enabled = false WHERE key = 'main'`, "model"},
		{"provider", `UPDATE provider SET enabled = false WHERE kind = 'model'`, "model.provider_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, 3)
			_, err := b.pool.Exec(t.Context(), tc.disable)
			require.NoError(t, err)

			_, err = b.svc.Start(t.Context(), b.caller, run.StartInput{AgentID: b.agentID, Input: "hi"})
			var ae *apperr.Error
			require.ErrorAs(t, err, &ae)
			require.Equal(t, apperr.KindDisabled, ae.Kind)
			require.Len(t, ae.Details, 1)
			require.Equal(t, tc.field, ae.Details[0].Field)
			var runs int
			require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT count(*) FROM run`).Scan(&runs))
			require.Zero(t, runs)
		})
	}
}
