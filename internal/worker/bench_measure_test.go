package worker_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/objectstore"
)

// Measuring instruments of the runs benchmarks: a statement tracer, the
// CPU of PostgreSQL backends and of this process, timed model calls and
// checkpoint puts, percentiles.

// sqlTracer counts the statements sent to PostgreSQL (BEGIN and COMMIT
// included: each is a round trip; a batch counts its statements) and times
// each claim, the batch of RunClaimLock and RunClaim (one round trip).
type sqlTracer struct {
	// paused stops the counting (while a benchmark sets up).
	paused     atomic.Bool
	statements atomic.Int64
	mu         sync.Mutex
	claimStart map[*pgx.Conn]time.Time
	claims     []time.Duration
	byName     map[string][]time.Duration
}

type sqlKey struct{}

type sqlStart struct {
	sql string
	at  time.Time
}

// statementName is a statement's sqlc name ("-- name: RunFence :one"), or
// its first words.
func statementName(sql string) string {
	sql = strings.TrimSpace(sql)
	if rest, ok := strings.CutPrefix(sql, "-- name: "); ok {
		name, _, _ := strings.Cut(rest, " ")
		return name
	}
	if len(sql) > 40 {
		sql = sql[:40]
	}
	return sql
}

func (t *sqlTracer) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if t.paused.Load() {
		return ctx
	}
	t.statements.Add(1)
	if strings.Contains(data.SQL, "name: RunClaimable ") {
		t.mu.Lock()
		t.claimStart[conn] = time.Now()
		t.mu.Unlock()
	}
	return context.WithValue(ctx, sqlKey{}, sqlStart{sql: data.SQL, at: time.Now()})
}

type batchKey struct{}

func (t *sqlTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	if t.paused.Load() {
		return ctx
	}
	claim := false
	for _, q := range data.Batch.QueuedQueries {
		t.statements.Add(1)
		claim = claim || strings.Contains(q.SQL, "name: RunClaim ")
	}
	if !claim {
		return ctx
	}
	return context.WithValue(ctx, batchKey{}, time.Now())
}

func (t *sqlTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (t *sqlTracer) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchEndData) {
	start, ok := ctx.Value(batchKey{}).(time.Time)
	if !ok {
		return
	}
	t.mu.Lock()
	t.claims = append(t.claims, time.Since(start))
	t.mu.Unlock()
}

func (t *sqlTracer) TraceQueryEnd(ctx context.Context, conn *pgx.Conn, _ pgx.TraceQueryEndData) {
	st, ok := ctx.Value(sqlKey{}).(sqlStart)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byName == nil {
		t.byName = map[string][]time.Duration{}
	}
	name := statementName(st.sql)
	t.byName[name] = append(t.byName[name], time.Since(st.at))
	if st.sql != "commit" && st.sql != "rollback" {
		return
	}
	if start, ok := t.claimStart[conn]; ok {
		delete(t.claimStart, conn)
		t.claims = append(t.claims, time.Since(start))
	}
}

func (t *sqlTracer) reset() {
	t.statements.Store(0)
	t.mu.Lock()
	t.claims = nil
	t.byName = nil
	t.mu.Unlock()
}

// logStatements logs the statements that took the most time in all, with
// their count and p50 (client-side: the round trip included).
func (t *sqlTracer) logStatements(b *testing.B, prefix string, top int) {
	b.Helper()
	t.mu.Lock()
	type row struct {
		name  string
		n     int
		total time.Duration
		p50   time.Duration
	}
	var rows []row
	var all time.Duration
	for name, ds := range t.byName {
		r := row{name: name, n: len(ds), p50: pct(ds, 50)}
		for _, d := range ds {
			r.total += d
		}
		all += r.total
		rows = append(rows, r)
	}
	t.mu.Unlock()
	slices.SortFunc(rows, func(a, c row) int { return int(c.total - a.total) })
	for _, r := range rows[:min(top, len(rows))] {
		fmt.Fprintf(os.Stderr, "%s: statement %-28s n=%-6d p50 %5.2f ms  share of statement time %4.1f%%\n", prefix, r.name, r.n, ms(r.p50), 100*float64(r.total)/float64(all))
	}
}

func (t *sqlTracer) claimTimes() []time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.claims)
}

// backendCPU answers the CPU time (user and system) each PostgreSQL backend
// serving this database has used, by pid, read from /proc (the server runs
// on this machine; clock ticks of 10 ms).
func backendCPU(b *testing.B, pool *pgxpool.Pool) map[int32]time.Duration {
	b.Helper()
	rows, err := pool.Query(context.Background(), `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
	require.NoError(b, err)
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	require.NoError(b, err)
	out := map[int32]time.Duration{}
	for _, pid := range pids {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // the backend ended
		}
		// The fields after the command's closing parenthesis: utime and
		// stime are the 12th and 13th of them.
		f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		out[pid] = time.Duration(ut+st) * 10 * time.Millisecond
	}
	return out
}

// backendCPUSince answers the CPU time the database's backends used since before.
func backendCPUSince(b *testing.B, pool *pgxpool.Pool, before map[int32]time.Duration) time.Duration {
	b.Helper()
	var d time.Duration
	for pid, t := range backendCPU(b, pool) {
		d += t - before[pid]
	}
	return d
}

// cpuTime is the CPU time (user and system) this process used so far.
func cpuTime(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// modelCall is one model request as the worker's HTTP client saw it: sent,
// and its streamed body read to the end.
type modelCall struct{ sent, read time.Time }

// callRecorder times every model request the client makes.
type callRecorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	log  []modelCall
}

func (c *callRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	sent := time.Now()
	resp, err := c.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &timedBody{ReadCloser: resp.Body, done: func() {
		c.mu.Lock()
		c.log = append(c.log, modelCall{sent: sent, read: time.Now()})
		c.mu.Unlock()
	}}
	return resp, nil
}

func (c *callRecorder) calls() []modelCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.log)
}

// timedBody calls done once, when the body reached its end or was closed.
type timedBody struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (t *timedBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if err == io.EOF {
		t.once.Do(t.done)
	}
	return n, err
}

func (t *timedBody) Close() error {
	t.once.Do(t.done)
	return t.ReadCloser.Close()
}

// timedStore times the Puts of a store.
type timedStore struct {
	objectstore.Store
	mu   sync.Mutex
	puts []time.Duration
}

func (s *timedStore) Put(ctx context.Context, key string, r io.Reader, size int64, opts objectstore.PutOptions) (objectstore.Info, error) {
	start := time.Now()
	info, err := s.Store.Put(ctx, key, r, size, opts)
	s.mu.Lock()
	s.puts = append(s.puts, time.Since(start))
	s.mu.Unlock()
	return info, err
}

// pct answers the p-th percentile (0..100) of ds, nearest rank.
func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// waitFinished waits until every run of the workspace finished, polling.
func waitFinished(b *testing.B, pool *pgxpool.Pool, within time.Duration, poll time.Duration) {
	b.Helper()
	deadline := time.Now().Add(within)
	for {
		var open int
		require.NoError(b, pool.QueryRow(context.Background(), `SELECT count(*) FROM run WHERE finished_at IS NULL`).Scan(&open))
		if open == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d runs still unfinished after %s", open, within)
		}
		time.Sleep(poll)
	}
}

// requireSucceeded checks that n runs succeeded with steps steps each.
func requireSucceeded(b *testing.B, pool *pgxpool.Pool, n, steps int) {
	b.Helper()
	var ok int
	require.NoError(b, pool.QueryRow(context.Background(),
		`SELECT count(*) FROM run WHERE status = 'succeeded' AND step = $1`, steps).Scan(&ok))
	require.Equal(b, n, ok, "every run succeeded with all its steps")
}
