package agent_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/revision"
)

// The figures of docs/performance.md ("Agents and skills"): `make bench/agents`.

// report adds the p50 and p99 of the per-operation durations in ms.
func report(b *testing.B, d []time.Duration) {
	slices.Sort(d)
	ms := func(q float64) float64 { return float64(d[int(q*float64(len(d)-1))].Microseconds()) / 1000 }
	b.ReportMetric(ms(0.50), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
}

// BenchmarkPublish publishes a new revision of one agent per iteration
// (content differs every time, so each one is written): lock the head, compare
// with the default, check the model reference, insert, update the head, audit.
func BenchmarkPublish(b *testing.B) {
	tb := setup(b)
	a := tb.create(b, "bench", `{"model":"main"}`)
	durations := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		cfg := json.RawMessage(`{"model":"main","instructions":"revision ` + strconv.Itoa(i) + `","limits":{"max_steps":20}}`)
		start := time.Now()
		p, err := tb.svc.Publish(b.Context(), tb.caller, revision.PublishInput{HeadID: a.ID, Config: cfg})
		durations = append(durations, time.Since(start))
		if err != nil || !p.Created {
			b.Fatalf("publish %d: %v", i, err)
		}
	}
	b.StopTimer()
	report(b, durations)
}

// seedAgents writes n agents (and their revision 1) with varied labels in one
// statement (testfactory.Agent makes one at a time, far too slowly for
// 100,000), then analyzes the table. Every agent has 6 labels: team (17
// values), env (3), tier (5), region (7), owner (1000) and, on 90 % of them,
// fleet:main. The values are drawn at random with a fixed seed.
func seedAgents(b *testing.B, tb *testBundle, n int) {
	b.Helper()
	ctx := b.Context()
	start := time.Now()
	_, err := tb.pool.Exec(ctx, `SELECT setseed(0.42)`)
	require.NoError(b, err)
	tx, err := tb.pool.Begin(ctx)
	require.NoError(b, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `
		INSERT INTO head (id, workspace_id, kind, name, description, labels, default_revision_id, created_by_id, updated_by_id)
		SELECT 'ap_' || lpad(i::text, 26, '0'), $1, 'agent', 'agent ' || i, 'seeded agent number ' || i,
		       jsonb_strip_nulls(jsonb_build_object(
		         'team', 't' || floor(random() * 17)::int,
		         'env', (ARRAY['dev', 'staging', 'prod'])[1 + floor(random() * 3)::int],
		         'tier', (ARRAY['a', 'b', 'c', 'd', 'e'])[1 + floor(random() * 5)::int],
		         'region', 'r' || floor(random() * 7)::int,
		         'owner', 'u' || floor(random() * 1000)::int,
		         'fleet', CASE WHEN random() < 0.9 THEN 'main' END)),
		       'rev_' || lpad(i::text, 26, '0'), $2, $2
		FROM generate_series(1, $3::int) AS i`, tb.caller.WorkspaceID, tb.caller.PrincipalID, n)
	require.NoError(b, err)
	_, err = tx.Exec(ctx, `
		INSERT INTO revision (id, head_id, number, config, content_hash, created_by_id)
		SELECT 'rev_' || lpad(i::text, 26, '0'), 'ap_' || lpad(i::text, 26, '0'), 1, '{"model":"main"}',
		       'sha256:' || repeat('0', 64), $1
		FROM generate_series(1, $2::int) AS i`, tb.caller.PrincipalID, n)
	require.NoError(b, err)
	require.NoError(b, tx.Commit(ctx))
	_, err = tb.pool.Exec(ctx, `ANALYZE head; ANALYZE revision`)
	require.NoError(b, err)
	b.Logf("seeded %d agents in %s", n, time.Since(start).Round(time.Millisecond))
}

// BenchmarkListThreeLabels lists the first page (50) of agents matching three
// label selectors among 100,000 agents of one workspace, through the service
// (its transaction, custom planning and the query). Three selections:
// selective (about 400 matches), broad (about 6,000), rare (about 30) and
// empty (no agent has all three: there is no region r9). It logs the EXPLAIN (ANALYZE, BUFFERS) of each.
func BenchmarkListThreeLabels(b *testing.B) {
	tb := setup(b)
	seedAgents(b, tb, 100_000)
	cases := []struct {
		name   string
		labels []string
	}{
		{"selective", []string{"team:t3", "env:prod", "tier:b"}},
		{"broad", []string{"fleet:main", "env:prod", "tier:a"}},
		{"rare", []string{"owner:u7", "fleet:main", "env:prod"}},
		{"empty", []string{"team:t3", "owner:u7", "region:r9"}},
	}
	for _, tc := range cases {
		explain(b, tb, tc.labels)
		b.Run(tc.name, func(b *testing.B) {
			durations := make([]time.Duration, 0, b.N)
			for range b.N {
				start := time.Now()
				page, err := tb.svc.List(b.Context(), tb.caller, revision.ListInput{Labels: tc.labels})
				durations = append(durations, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				_ = page
			}
			report(b, durations)
		})
	}
}

// explain logs the plan of the list query for the selectors, planned as the
// service plans it (custom plans).
func explain(b *testing.B, tb *testBundle, selectors []string) {
	b.Helper()
	ctx := b.Context()
	sel := map[string]string{}
	for _, s := range selectors {
		k, v, _ := strings.Cut(s, ":")
		sel[k] = v
	}
	raw, err := json.Marshal(sel)
	require.NoError(b, err)
	rows, err := tb.pool.Query(ctx, `EXPLAIN (ANALYZE, BUFFERS)
		SELECT * FROM head
		WHERE workspace_id = $1 AND kind = 'agent' AND id < $2 AND labels @> $3::jsonb
		  AND ($4::boolean IS NULL OR (archived_at IS NOT NULL) = $4::boolean)
		  AND ($5::text IS NULL OR (name || E'\n' || description) ILIKE $5::text)
		ORDER BY id DESC LIMIT 50`, tb.caller.WorkspaceID, "\uffff", string(raw), nil, nil)
	require.NoError(b, err)
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var line string
		require.NoError(b, rows.Scan(&line))
		plan = append(plan, line)
	}
	require.NoError(b, rows.Err())
	b.Logf("EXPLAIN (ANALYZE, BUFFERS) for %v:\n%s", selectors, strings.Join(plan, "\n"))
}
