package memory_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	memorytool "github.com/svcdev/svc/internal/tool/memory"
)

// BenchmarkBuiltinSearch measures memory_search over one builtin memory of
// 10,000 records of about 40 words each (no full-text index: every record of
// the memory is parsed per search). Run with TEST_DATABASE_URL set:
//
//	go test -run '^$' -bench BuiltinSearch ./internal/tool/memory
func BenchmarkBuiltinSearch(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			bb := setup(b)
			m := bb.builtin(b, bb.caller, "notes", "")
			// Words drawn from a 5,000-word vocabulary, so a word is in ~1% of
			// records; seeded in one statement, not a factory call per row.
			_, err := bb.pool.Exec(b.Context(), `
				INSERT INTO memory_record (id, workspace_id, memory_id, content, metadata)
				SELECT 'mrec_' || lpad(g::text, 26, '0'), $1, $2,
				       (SELECT string_agg('w' || (random() * 5000)::int, ' ') FROM generate_series(1, 40) WHERE g > 0),
				       '{}'
				FROM generate_series(1, $3) g`, bb.caller.WorkspaceID, m.ID, n)
			require.NoError(b, err)
			_, err = bb.pool.Exec(b.Context(), `ANALYZE memory_record`)
			require.NoError(b, err)
			list, err := bb.ts.Tools(b.Context(), bb.caller.WorkspaceID, []string{m.ID})
			require.NoError(b, err)
			search := list[0]
			require.Equal(b, memorytool.SearchTool, search.Def.Name)
			args, _ := json.Marshal(map[string]any{"memory": m.ID, "query": "w42 w4242", "limit": 10})
			b.ResetTimer()
			for b.Loop() {
				res, err := search.Call(b.Context(), args)
				if err != nil || res.IsError {
					b.Fatal(err, res.Text)
				}
			}
		})
	}
}
