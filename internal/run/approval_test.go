package run_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/run"
)

// TestChildAsksWhileParentSuspends: a child that asks for a person while
// its parent's attempt is suspending the parent (for the child's answer)
// makes the parent show waiting, whichever of the two transactions decides
// first. The parent's suspension is held, with the parent's row locked,
// after it decided from what it saw (the child asked for nothing yet) how
// the parent shows; the child asks meanwhile. Both are in the inbox once
// the two have ended.
func TestChildAsksWhileParentSuspends(t *testing.T) {
	t.Parallel()
	b := setup(t, 3)
	ctx := t.Context()
	parent, err := b.svc.Start(ctx, b.caller, run.StartInput{AgentID: b.agentID, Input: "Ask the helper."})
	require.NoError(t, err)
	claims, err := b.svc.Claim(ctx, "w1", 1, time.Minute)
	require.NoError(t, err)
	require.Len(t, claims, 1)
	parentLease := claims[0].Lease
	childID, err := b.svc.StartChild(ctx, parentLease, "call_helper", b.agentID, "Look it up.",
		run.SubagentLimits{MaxDepth: 4, MaxLive: 8, MaxTotal: 64})
	require.NoError(t, err)
	claims, err = b.svc.Claim(ctx, "w1", 1, time.Minute)
	require.NoError(t, err)
	require.Len(t, claims, 1)
	require.Equal(t, childID, claims[0].Lease.RunID)
	childLease := claims[0].Lease

	// The update that ends the root run's lease (the suspension's write of
	// its status) waits for an advisory lock the test holds.
	const key = 52052
	hold, err := b.pool.Acquire(ctx)
	require.NoError(t, err)
	defer hold.Release()
	_, err = hold.Exec(ctx, `SELECT pg_advisory_lock($1)`, key)
	require.NoError(t, err)
	released := false
	defer func() {
		if !released {
			_, _ = hold.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, key)
		}
	}()
	_, err = b.pool.Exec(ctx, `
		CREATE FUNCTION hold_root_suspend() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF OLD.parent_run_id IS NULL AND OLD.lease_attempt_id IS NOT NULL AND NEW.lease_attempt_id IS NULL THEN
				PERFORM pg_advisory_xact_lock(`+strconv.Itoa(key)+`);
			END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER hold_root_suspend BEFORE UPDATE ON run FOR EACH ROW EXECUTE FUNCTION hold_root_suspend();`)
	require.NoError(t, err)

	parentDone := make(chan error, 1)
	go func() {
		parentDone <- b.svc.Suspend(context.WithoutCancel(ctx), parentLease, []string{"call_helper"}, nil, run.ApprovalTerms{}, 1)
	}()
	require.Eventually(t, func() bool { return b.waitingSessions(t, "advisory") == 1 }, 30*time.Second, 5*time.Millisecond,
		"the parent's suspension reached its held write")

	childDone := make(chan error, 1)
	go func() {
		childDone <- b.svc.Suspend(context.WithoutCancel(ctx), childLease, []string{"call_lookup"},
			[]run.ApprovalRequest{{CallID: "call_lookup", Name: "lookup", Arguments: `{"word":"banana"}`}},
			run.ApprovalTerms{Timeout: time.Hour, OnTimeout: run.OnTimeoutDeny}, 1)
	}()
	// The child's suspension either ends or waits for the parent's row.
	var childErr error
	childEnded := false
	require.Eventually(t, func() bool {
		select {
		case childErr = <-childDone:
			childEnded = true
			return true
		default:
		}
		return b.waitingSessions(t, "transactionid") > 0
	}, 30*time.Second, 5*time.Millisecond, "the child's suspension ended or waits for the parent")

	_, err = hold.Exec(ctx, `SELECT pg_advisory_unlock($1)`, key)
	require.NoError(t, err)
	released = true
	require.NoError(t, <-parentDone)
	if !childEnded {
		childErr = <-childDone
	}
	require.NoError(t, childErr)

	for _, id := range []string{parent.ID, childID} {
		r, err := b.svc.GetRun(ctx, b.caller, id)
		require.NoError(t, err)
		require.Equal(t, run.StatusWaiting, r.Status, "run %s (the parent is %s)", id, parent.ID)
	}
	page, err := b.svc.ListWaiting(ctx, b.caller, nil, nil)
	require.NoError(t, err)
	require.Len(t, page.Items, 2, "the parent and its child wait")
	for _, w := range page.Items {
		require.Len(t, w.Pending, 1)
		require.Equal(t, childID, w.Pending[0].RunID)
		require.Equal(t, "call_lookup", w.Pending[0].CallID)
	}
}

// waitingSessions counts the sessions of the test's database that wait for
// a lock of kind event (pg_stat_activity's wait_event: advisory,
// transactionid, tuple...).
func (b *bundle) waitingSessions(t *testing.T, event string) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = $1`, event).Scan(&n))
	return n
}
