package run_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/run"
)

// TestChildStartsTakeTheLastSlotOnce: calls from two runs of one tree that
// race for its last live slot start exactly one child; the others are
// refused, naming the limit, and start nothing.
func TestChildStartsTakeTheLastSlotOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, 3)
	ctx := t.Context()
	roomy := run.SubagentLimits{MaxDepth: 4, MaxLive: 100, MaxTotal: 100}
	root, err := b.svc.Start(ctx, b.caller, run.StartInput{AgentID: b.agentID, Input: "Split it."})
	require.NoError(t, err)
	claims, err := b.svc.Claim(ctx, "w1", 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, claims, 1)
	rootLease := claims[0].Lease
	for _, call := range []string{"call_a", "call_b"} {
		_, err := b.svc.StartChild(ctx, rootLease, call, b.agentID, "Half of it.", roomy)
		require.NoError(t, err)
	}
	claims, err = b.svc.Claim(ctx, "w1", 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, claims, 2, "both children run")

	// Each new run takes a while to write, so the racing starts overlap.
	_, err = b.pool.Exec(ctx, `
		CREATE FUNCTION slow_insert() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM pg_sleep(0.2); RETURN NEW; END $$;
		CREATE TRIGGER slow_insert BEFORE INSERT ON run FOR EACH ROW EXECUTE FUNCTION slow_insert();`)
	require.NoError(t, err)
	// Two of the root's descendants are live: one more may be.
	lim := run.SubagentLimits{MaxDepth: 4, MaxLive: 3, MaxTotal: 100}
	var wg sync.WaitGroup
	var mu sync.Mutex
	started, refused := 0, 0
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := claims[i%2]
			_, err := b.svc.StartChild(ctx, c.Lease, fmt.Sprintf("call_%d", i), b.agentID, "A piece.", lim)
			mu.Lock()
			defer mu.Unlock()
			var cr *run.ChildRefused
			switch {
			case err == nil:
				started++
			case errors.As(err, &cr):
				if !strings.Contains(cr.Reason, "worker.subagent_max_live_children") {
					t.Errorf("refused for another reason: %s", cr.Reason)
				}
				refused++
			default:
				t.Errorf("start child: %v", err)
			}
		}()
	}
	wg.Wait()
	require.Equal(t, 1, started)
	require.Equal(t, 9, refused)
	var n int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM run WHERE root_run_id = $1`, root.ID).Scan(&n))
	require.Equal(t, 3, n)
}
