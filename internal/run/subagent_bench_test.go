package run_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/run"
)

// BenchmarkStartChild measures a subagent call's start of a child run, in a
// tree that already has some descendants: the whole start ("start": fence,
// bounds, thread, input, run, message, event, webhook), and the bounds'
// part of it alone ("bounds": the tree's lock and its counts, in a
// transaction of their own).
func BenchmarkStartChild(b *testing.B) {
	for _, existing := range []int{0, 60} {
		tb := setup(b, 3)
		ctx := context.Background()
		root, err := tb.svc.Start(ctx, tb.caller, run.StartInput{AgentID: tb.agentID, Input: "Split it."})
		require.NoError(b, err)
		claims, err := tb.svc.Claim(ctx, "w1", 1, time.Hour)
		require.NoError(b, err)
		lease := claims[0].Lease
		roomy := run.SubagentLimits{MaxDepth: 4, MaxLive: 1 << 30, MaxTotal: 1 << 30}
		for i := range existing {
			_, err := tb.svc.StartChild(ctx, lease, fmt.Sprintf("seed_%d", i), tb.agentID, "A piece.", roomy)
			require.NoError(b, err)
		}
		b.Run(fmt.Sprintf("start/descendants=%d", existing), func(b *testing.B) {
			i := 0
			for b.Loop() {
				i++
				_, err := tb.svc.StartChild(ctx, lease, fmt.Sprintf("call_%d", i), tb.agentID, "A piece.", roomy)
				require.NoError(b, err)
			}
		})
		q := db.New()
		b.Run(fmt.Sprintf("bounds/descendants=%d", existing), func(b *testing.B) {
			for b.Loop() {
				err := dbx.WithTx(ctx, tb.pool, func(ctx context.Context, tx pgx.Tx) error {
					if err := q.SubagentTreeLock(ctx, tx, root.ID); err != nil {
						return err
					}
					_, err := q.SubagentTreeCounts(ctx, tx, &root.ID)
					return err
				})
				require.NoError(b, err)
			}
		})
	}
}
