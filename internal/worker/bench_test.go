package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/agent"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/checkpoint"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/llm"
	"github.com/svcdev/svc/internal/llm/llmtest"
	"github.com/svcdev/svc/internal/metrics"
	"github.com/svcdev/svc/internal/objectstore"
	"github.com/svcdev/svc/internal/objectstore/objectstoretest"
	types "github.com/svcdev/svc/internal/provider/catalog"
	refs "github.com/svcdev/svc/internal/refcheck"
	"github.com/svcdev/svc/internal/revision"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/skill"
	"github.com/svcdev/svc/internal/stream"
	"github.com/svcdev/svc/internal/sweep"
	"github.com/svcdev/svc/internal/testdb"
	"github.com/svcdev/svc/internal/testfactory"
	"github.com/svcdev/svc/internal/tool"
	"github.com/svcdev/svc/internal/worker"
)

// The benchmarks of this file measure the runs engine on real PostgreSQL
// (TEST_DATABASE_URL) and both object stores (a file store, and S3 through
// TEST_S3_*), with a model that answers at once over the chat completions
// wire protocol (llmtest) and a tool that answers at once: what they time is
// the engine's own work. `make bench/runs` runs them; docs/performance.md
// ("Runs engine") has the figures.

// benchStores are the object stores every benchmark runs against.
var benchStores = []string{"file", "s3"}

// benchEnv is a workspace with an agent on a scripted model, a run service
// over a pool sized as the application sizes it, and an object store.
type benchEnv struct {
	pool    *pgxpool.Pool
	runs    *run.Service
	caller  *auth.Caller
	agentID string
	ring    *keyring.Ring
	reg     *types.Registry
	store   objectstore.Store
	policy  *endpoint.Policy
	log     *slog.Logger
	sql     *sqlTracer
	// prom holds the metrics of the run service, the executor and the
	// worker, as a process registers them; nil records none.
	prom *prometheus.Registry
}

// newBenchEnv makes the environment; poolOpts edit the pool's
// configuration after the statement counter is set.
func newBenchEnv(b *testing.B, storeKind string, script []llmtest.Turn, poolOpts ...func(*pgxpool.Config)) *benchEnv {
	b.Helper()
	return newBenchEnvWith(b, storeKind, script, false, poolOpts...)
}

// newBenchEnvWith is newBenchEnv, with the process's metrics recorded when
// instrumented.
func newBenchEnvWith(b *testing.B, storeKind string, script []llmtest.Turn, instrumented bool, poolOpts ...func(*pgxpool.Config)) *benchEnv {
	b.Helper()
	ctx := context.Background()
	cfg := config.Default()
	// The pool as internal/app makes it with dbx.NewPool (database.max_conns,
	// idle_in_transaction_session_timeout of half a lease), with a tracer
	// that counts statements and times claims.
	pcfgPool, err := pgxpool.ParseConfig(testdb.NewURL(b))
	require.NoError(b, err)
	pcfgPool.MaxConns = int32(cfg.Database.MaxConns)
	pcfgPool.ConnConfig.RuntimeParams["application_name"] = "svc"
	idleInTx := max(time.Duration(cfg.Worker.LeaseSeconds)*time.Second/2, time.Second)
	pcfgPool.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = strconv.FormatInt(idleInTx.Milliseconds(), 10)
	tracer := &sqlTracer{claimStart: map[*pgx.Conn]time.Time{}}
	pcfgPool.ConnConfig.Tracer = tracer
	for _, o := range poolOpts {
		o(pcfgPool)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfgPool)
	require.NoError(b, err)
	b.Cleanup(pool.Close)
	admin := testfactory.Bootstrap(b, pool)
	path := filepath.Join(b.TempDir(), "ring.json")
	require.NoError(b, keyring.Generate(path))
	ring, err := keyring.Load(path)
	require.NoError(b, err)
	srv := llmtest.NewChatServer(script)
	b.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	require.NoError(b, err)
	port, err := strconv.ParseUint(u.Port(), 10, 16)
	require.NoError(b, err)
	policy := &endpoint.Policy{AllowHTTP: true, AllowedPorts: []uint16{uint16(port)},
		AllowedPrefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}

	prv := id.New(id.Provider)
	pcfg, _ := json.Marshal(map[string]string{"base_url": srv.URL + "/v1"})
	_, err = pool.Exec(ctx, `INSERT INTO provider (id, workspace_id, kind, type, name, config, created_by_id, updated_by_id)
		VALUES ($1, $2, 'model', 'openai_compatible', 'Local', $3, $4, $4)`, prv, admin.WorkspaceID, pcfg, admin.PrincipalID)
	require.NoError(b, err)
	_, err = pool.Exec(ctx, `INSERT INTO model (workspace_id, key, provider_id, api, model, created_by_id, updated_by_id)
		VALUES ($1, 'main', $2, 'chat_completions', 'scripted-1', $3, $3)`, admin.WorkspaceID, prv, admin.PrincipalID)
	require.NoError(b, err)
	reg, err := types.New(types.Options{})
	require.NoError(b, err)
	agents := agent.NewService(pool, reg, refs.None{})
	caller := &auth.Caller{PrincipalID: admin.PrincipalID, OrganizationID: admin.OrganizationID, WorkspaceID: admin.WorkspaceID, Role: auth.RoleAdmin}
	head, err := agents.Create(ctx, caller, revision.CreateInput{Name: "bench",
		Config: json.RawMessage(`{"model":"main","instructions":"Be brief.","limits":{"max_steps":100}}`)})
	require.NoError(b, err)
	// Events go to the live tails in Redis as in a process.
	ropts, err := redis.ParseURL(os.Getenv("TEST_REDIS_URL"))
	require.NoError(b, err)
	rdb := redis.NewClient(ropts)
	b.Cleanup(func() { _ = rdb.Close() })
	pub := stream.NewPublisher(rdb, "bench:"+id.New(id.Run)+":", slog.New(slog.NewTextHandler(io.Discard, nil)))
	var prom *prometheus.Registry
	var runMetrics *run.Metrics
	if instrumented {
		prom = prometheus.NewRegistry()
		runMetrics = run.NewMetrics(prom)
	}
	runs := run.NewService(pool, agents, skill.NewService(pool, refs.None{}), reg, run.Options{MaxAttempts: cfg.Worker.MaxAttempts, Publisher: pub,
		Metrics: runMetrics})

	var store objectstore.Store
	switch storeKind {
	case "file":
		store, err = objectstore.OpenFile(b.TempDir())
	case "s3":
		store, err = objectstore.OpenS3(objectstoretest.S3Config(b))
	default:
		err = fmt.Errorf("unknown store %q", storeKind)
	}
	require.NoError(b, err)
	return &benchEnv{pool: pool, runs: runs, caller: caller, agentID: head.ID, ring: ring, reg: reg, store: store,
		policy: policy, log: slog.New(slog.NewTextHandler(io.Discard, nil)), sql: tracer, prom: prom}
}

// executor returns an executor whose model calls go through rt wrapped
// around the endpoint policy's client (nil: the client as it is).
func (e *benchEnv) executor(wrap func(http.RoundTripper) http.RoundTripper) *worker.Executor {
	client := e.policy.HTTPClient(0)
	if wrap != nil {
		c := *client
		base := c.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		c.Transport = wrap(base)
		client = &c
	}
	d := worker.ExecutorDeps{Runs: e.runs, Objects: e.store,
		HTTPClient: client, Toolsets: []tool.Toolset{lookupTool(&atomic.Int32{})}, Log: e.log}
	if e.prom != nil {
		d.ModelMetrics, d.ToolMetrics = llm.NewMetrics(e.prom), tool.NewMetrics(e.prom)
	}
	return worker.NewExecutor(readers(d, e.pool, e.reg, e.ring))
}

// worker returns a worker with the application's settings but slots; the
// poll is the application's default (Options.Poll 0).
func (e *benchEnv) worker(exec *worker.Executor, name string, slots int) *worker.Worker {
	cfg := config.Default().Worker
	var m *worker.Metrics
	if e.prom != nil {
		m = worker.NewMetrics(e.prom)
	}
	return worker.New(e.pool, e.runs, exec, worker.Options{ID: name, Slots: slots,
		Lease: time.Duration(cfg.LeaseSeconds) * time.Second, Drain: time.Duration(cfg.DrainSeconds) * time.Second,
		Gather: time.Duration(cfg.ClaimGatherMS) * time.Millisecond, Metrics: m}, e.log)
}

// startWorker runs w until the benchmark ends.
func startWorker(b *testing.B, w *worker.Worker) (stop func()) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	b.Cleanup(stop)
	return stop
}

// stepScript is a run of steps steps: steps-1 steps that each call the
// lookup tool once, then a final answer.
func stepScript(steps int) []llmtest.Turn {
	out := make([]llmtest.Turn, 0, steps)
	for i := range steps - 1 {
		out = append(out, llmtest.Turn{Text: "Looking up word " + strconv.Itoa(i) + ".", Chunks: 2,
			ToolCalls: []llmtest.Call{{Name: "lookup", Arguments: `{"word":"kiwi"}`}}})
	}
	return append(out, llmtest.Turn{Text: "All done.", Chunks: 2})
}

// BenchmarkStepOverhead runs runs of 20 steps (19 tool steps, then the
// final answer) one after the other on a worker of one slot, with the
// model and the tool answering at once. Between reading a model answer to
// its end and sending the next request, the worker runs the tool, writes
// the tool.call event, flushes the streamed text (message.delta), writes
// the checkpoint object and commits the step: that gap is the engine's
// overhead per step, reported as p50 and p99. The checkpoint Put is timed
// on its own. Each store is measured with the process's metrics off and on
// (metrics=on records runs, attempts, slots, model and tool calls as a
// process does). Needs TEST_DATABASE_URL and TEST_S3_*.
func BenchmarkStepOverhead(b *testing.B) {
	const steps = 20
	for _, kind := range benchStores {
		for _, instrumented := range []bool{false, true} {
			name := "store=" + kind + "/metrics=off"
			if instrumented {
				name = "store=" + kind + "/metrics=on"
			}
			b.Run(name, func(b *testing.B) { benchStepOverhead(b, kind, steps, instrumented) })
		}
	}
}

func benchStepOverhead(b *testing.B, kind string, steps int, instrumented bool) {
	env := newBenchEnvWith(b, kind, stepScript(steps), instrumented)
	ts := &timedStore{Store: env.store}
	env.store = ts
	rec := &callRecorder{}
	exec := env.executor(func(base http.RoundTripper) http.RoundTripper { rec.base = base; return rec })
	startWorker(b, env.worker(exec, "bench", 1))

	var gaps, whole, claimToCall, lastToEnd []time.Duration
	env.sql.reset()
	cpu0 := cpuTime(b)
	b.ResetTimer()
	for i := range b.N {
		ctx := context.Background()
		before := len(rec.calls())
		accepted := time.Now()
		r, err := env.runs.Start(ctx, env.caller, run.StartInput{AgentID: env.agentID, Input: "go " + strconv.Itoa(i)})
		require.NoError(b, err)
		var got run.Run
		for {
			got, err = env.runs.GetRun(ctx, env.caller, r.ID)
			require.NoError(b, err)
			if got.Status.Finished() {
				break
			}
			time.Sleep(time.Millisecond)
		}
		require.Equal(b, run.StatusSucceeded, got.Status, "%+v", got.Error)
		calls := rec.calls()[before:]
		require.Len(b, calls, steps)
		for k := 0; k+1 < len(calls); k++ {
			gaps = append(gaps, calls[k+1].sent.Sub(calls[k].read))
			whole = append(whole, calls[k+1].sent.Sub(calls[k].sent))
		}
		claimToCall = append(claimToCall, calls[0].sent.Sub(accepted))
		if got.FinishedAt != nil {
			lastToEnd = append(lastToEnd, got.FinishedAt.Sub(calls[len(calls)-1].read))
		}
	}
	b.StopTimer()
	cpu := cpuTime(b) - cpu0
	b.ReportMetric(ms(cpu)/float64(b.N*steps), "cpu-ms/step")
	b.ReportMetric(ms(pct(gaps, 50)), "overhead-p50-ms/step")
	b.ReportMetric(ms(pct(gaps, 99)), "overhead-p99-ms/step")
	b.ReportMetric(ms(pct(whole, 50)), "step-p50-ms")
	b.ReportMetric(ms(pct(ts.puts, 50)), "put-p50-ms")
	b.Logf("store %s, metrics %t: %d tool steps: overhead p50 %.2f ms p90 %.2f p99 %.2f max %.2f; whole step (with the model call) p50 %.2f p99 %.2f; checkpoint Put p50 %.2f p99 %.2f; "+
		"accepted to first model call p50 %.1f ms; last answer to finished_at p50 %.1f ms",
		kind, instrumented, len(gaps), ms(pct(gaps, 50)), ms(pct(gaps, 90)), ms(pct(gaps, 99)), ms(pct(gaps, 100)),
		ms(pct(whole, 50)), ms(pct(whole, 99)), ms(pct(ts.puts, 50)), ms(pct(ts.puts, 99)),
		ms(pct(claimToCall, 50)), ms(pct(lastToEnd, 50)))
}

// BenchmarkEngineParts calls the engine's writes one by one, as an attempt
// of a one-step-at-a-time run makes them: Claim (one run), Emit (a
// message.delta and a tool.call), the checkpoint Put, Commit (the fenced
// transaction of a tool step) and Finish. Each is timed alone and reported
// as its p50 and p99; ns/op is one run of 4 tool steps and a final one.
// Needs TEST_DATABASE_URL and TEST_S3_*.
func BenchmarkEngineParts(b *testing.B) {
	const steps = 5
	for _, kind := range benchStores {
		b.Run("store="+kind, func(b *testing.B) {
			env := newBenchEnv(b, kind, stepScript(steps))
			ctx := context.Background()
			part := map[string][]time.Duration{}
			stmts := map[string]int64{}
			timed := func(name string, fn func() error) {
				n0 := env.sql.statements.Load()
				start := time.Now()
				require.NoError(b, fn())
				part[name] = append(part[name], time.Since(start))
				stmts[name] += env.sql.statements.Load() - n0
			}
			lease := time.Duration(config.Default().Worker.LeaseSeconds) * time.Second
			env.sql.reset()
			checkpointDoc := bytes.Repeat([]byte("x"), 2048) // about the size of a 5-step run's state
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				env.sql.paused.Store(true)
				_, err := env.runs.Start(ctx, env.caller, run.StartInput{AgentID: env.agentID, Input: "go " + strconv.Itoa(i)})
				require.NoError(b, err)
				env.sql.paused.Store(false)
				b.StartTimer()
				var claimed []run.Claimed
				timed("claim", func() error {
					var err error
					claimed, err = env.runs.Claim(ctx, "bench", 1, lease)
					return err
				})
				require.Len(b, claimed, 1)
				l := claimed[0].Lease
				for s := int32(1); s <= steps; s++ {
					final := s == steps
					timed("emit", func() error {
						return env.runs.Emit(ctx, l, []run.NewEvent{{Type: run.EventMessageDelta, Data: run.DeltaData{Text: "Looking it up."}}})
					})
					st := run.Step{Number: s, Usage: run.Usage{InputTokens: 10 * int64(s), OutputTokens: 5 * int64(s)},
						Messages: []run.Message{{Role: "assistant", Content: "Looking it up."}},
						Events:   []run.NewEvent{{Type: run.EventMessageCompleted, Data: run.MessageData{Role: "assistant", Content: "Looking it up."}}}}
					if !final {
						callID := "call_" + strconv.Itoa(int(s))
						timed("emit", func() error {
							return env.runs.Emit(ctx, l, []run.NewEvent{{Type: run.EventToolCall, Data: run.ToolCallData{CallID: callID, Name: "lookup", Arguments: `{"word":"kiwi"}`}}})
						})
						st.Messages[0].ToolCalls = []run.ToolCall{{ID: callID, Name: "lookup", Arguments: `{"word":"kiwi"}`}}
						st.Messages = append(st.Messages, run.Message{Role: "tool", Content: "kiwi has 4 letters", ToolCallID: &callID})
						st.Events = append(st.Events, run.NewEvent{Type: run.EventToolResult, Data: run.ToolResultData{CallID: callID, Name: "lookup", Content: "kiwi has 4 letters"}})
					}
					key, err := checkpoint.Key(l.WorkspaceID, l.RunID, fmt.Sprintf("a%04d-s%06d.json", l.Number, s))
					require.NoError(b, err)
					st.CheckpointKey = key
					timed("put", func() error {
						_, err := env.store.Put(ctx, key, bytes.NewReader(checkpointDoc), int64(len(checkpointDoc)), objectstore.PutOptions{ContentType: "application/json"})
						return err
					})
					timed("commit", func() error { return env.runs.Commit(ctx, l, st) })
				}
				timed("finish", func() error {
					return env.runs.Finish(ctx, l, run.StatusSucceeded, nil, run.Usage{InputTokens: 50, OutputTokens: 25}, steps)
				})
			}
			b.StopTimer()
			env.sql.logStatements(b, "store "+kind, 12)
			requireSucceeded(b, env.pool, b.N, steps)
			var total time.Duration
			for _, ds := range part {
				for _, d := range ds {
					total += d
				}
			}
			for _, name := range []string{"claim", "emit", "put", "commit", "finish"} {
				ds := part[name]
				var sum time.Duration
				for _, d := range ds {
					sum += d
				}
				b.ReportMetric(ms(pct(ds, 50)), name+"-p50-ms")
				b.Logf("store %s: %-6s n=%-5d p50 %6.2f ms  p99 %6.2f ms  share of the engine's time %4.1f%%  statements each %.1f",
					kind, name, len(ds), ms(pct(ds, 50)), ms(pct(ds, 99)), 100*float64(sum)/float64(total), float64(stmts[name])/float64(len(ds)))
			}
		})
	}
}

// BenchmarkThousandRuns accepts 1,000 runs of 5 steps (4 tool steps and a
// final answer), then starts ONE worker of 32 slots and times until the
// last run finished. Target: under 30 s. Needs TEST_DATABASE_URL and
// TEST_S3_*.
func BenchmarkThousandRuns(b *testing.B) {
	const runs, steps, slots = 1000, 5, 32
	for _, kind := range benchStores {
		b.Run("store="+kind, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				env := newBenchEnv(b, kind, stepScript(steps))
				ctx := context.Background()
				for i := range runs {
					_, err := env.runs.Start(ctx, env.caller, run.StartInput{AgentID: env.agentID, Input: "go " + strconv.Itoa(i)})
					require.NoError(b, err)
				}
				_, err := env.pool.Exec(ctx, "VACUUM ANALYZE run")
				require.NoError(b, err)
				b.Logf("store %s: claim plan with %d runs ready: %s", kind, runs, explainClaim(b, env.pool, slots))
				w := env.worker(env.executor(nil), "bench", slots)
				env.sql.reset()
				cpu0, pg0 := cpuTime(b), backendCPU(b, env.pool)
				b.StartTimer()
				start := time.Now()
				stop := startWorker(b, w)
				// Sample how many slots hold an attempt.
				sampling, stopSampling := context.WithCancel(ctx)
				var samples, busy atomic.Int64
				var sg sync.WaitGroup
				sg.Go(func() {
					t := time.NewTicker(5 * time.Millisecond)
					defer t.Stop()
					for {
						select {
						case <-sampling.Done():
							return
						case <-t.C:
							samples.Add(1)
							busy.Add(int64(w.Active()))
						}
					}
				})
				waitFinished(b, env.pool, 5*time.Minute, 20*time.Millisecond)
				elapsed := time.Since(start)
				b.StopTimer()
				stopSampling()
				sg.Wait()
				cpu, pgCPU := cpuTime(b)-cpu0, backendCPUSince(b, env.pool, pg0)
				stmts := env.sql.statements.Load()
				env.sql.logStatements(b, "store "+kind, 25)
				stop()
				requireSucceeded(b, env.pool, runs, steps)
				cl := drainCleanups(b, env.pool, env.store)
				b.ReportMetric(float64(cl.deliveries)/runs, "cleanups/run")
				b.ReportMetric(cl.took.Seconds(), "cleanup-s")
				b.Logf("store %s: %d checkpoint_cleanup deliveries (%.1f per run), delivered in %s; this process used %.2f s and PostgreSQL's backends %.2f s of CPU meanwhile",
					kind, cl.deliveries, float64(cl.deliveries)/runs, cl.took.Round(time.Millisecond), cl.cpu.Seconds(), cl.backend.Seconds())
				claims := env.sql.claimTimes()
				occupancy := float64(busy.Load()) / float64(max(samples.Load(), 1))
				b.ReportMetric(occupancy, "busy-slots")
				b.ReportMetric(ms(cpu)/float64(runs*steps), "cpu-ms/step")
				b.ReportMetric(ms(pgCPU)/float64(runs*steps), "pg-cpu-ms/step")
				b.Logf("store %s: PostgreSQL's backends used %.1f s of CPU (%.2f ms per step)", kind, pgCPU.Seconds(), ms(pgCPU)/float64(runs*steps))
				b.Logf("store %s: slots busy on average %.1f of %d; this process used %.1f s of CPU (%.2f ms per step, %.0f%% of one core); "+
					"%d statements (%.1f per step, polling included: 1 per 20 ms); %d claim transactions, p50 %.1f ms p99 %.1f ms",
					kind, occupancy, slots, cpu.Seconds(), ms(cpu)/float64(runs*steps), 100*cpu.Seconds()/elapsed.Seconds(),
					stmts, float64(stmts)/float64(runs*steps), len(claims), ms(pct(claims, 50)), ms(pct(claims, 99)))
				b.ReportMetric(elapsed.Seconds(), "s/1000runs")
				b.ReportMetric(runs/elapsed.Seconds(), "runs/s")
				b.ReportMetric(runs*steps/elapsed.Seconds(), "steps/s")
				b.Logf("store %s: %d runs of %d steps on one worker of %d slots in %s: %.1f runs/s, %.0f steps/s",
					kind, runs, steps, slots, elapsed.Round(time.Millisecond), runs/elapsed.Seconds(), runs*steps/elapsed.Seconds())
			}
		})
	}
}

// explainClaim answers the plan of the claim statement (RunClaim) for n
// runs, executed in a transaction that is rolled back.
func explainClaim(b *testing.B, pool *pgxpool.Pool, n int) string {
	b.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	require.NoError(b, err)
	defer func() { _ = tx.Rollback(ctx) }()
	ex := &explainer{tx: tx}
	_, err = db.New().RunClaim(ctx, ex, db.RunClaimParams{PageLimit: int32(n), MaxRunning: int32(n), Worker: "explain", LeaseSeconds: 30})
	require.NoError(b, err)
	require.NoError(b, ex.err)
	return strings.Join(ex.plan, " | ")
}

// explainer runs a query as EXPLAIN ANALYZE, keeps the plan and answers no
// rows.
type explainer struct {
	db.DBTX
	tx   pgx.Tx
	plan []string
	err  error
}

func (e *explainer) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	rows, err := e.tx.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "+sql, args...)
	if err != nil {
		return nil, err
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	for _, l := range lines {
		e.plan = append(e.plan, strings.TrimSpace(l))
	}
	e.err = err
	return e.tx.Query(ctx, "SELECT 1 WHERE false")
}

// hangAfterFirst lets a worker's first model request through and holds
// every later one until it is cancelled: the worker goes silent in its
// second step, as a stopped process would.
type hangAfterFirst struct {
	base http.RoundTripper
	n    atomic.Int32
	hung chan struct{}
}

func (h *hangAfterFirst) RoundTrip(req *http.Request) (*http.Response, error) {
	if h.n.Add(1) == 1 {
		return h.base.RoundTrip(req)
	}
	select {
	case h.hung <- struct{}{}:
	default:
	}
	<-req.Context().Done()
	return nil, req.Context().Err()
}

// BenchmarkCrashResume measures how soon a run whose worker went silent
// continues on another worker: a first worker runs step 1 and hangs in
// step 2; its lease is then made to run out (lease_expires_at = now(), as
// if the worker had crashed a lease ago), and the clock starts. The
// expire_leases sweep runs under the sweep runner every
// worker.authority_seconds (as the application registers it) and a second
// worker waits for runs. Reported: from the lease's expiry to the sweep
// ending the attempt, to the new attempt's claim, and to its first step
// committed. The expiry falls at a random moment of the sweep's period.
// Target: the run resumes within authority_seconds plus one lease of the
// crash, that is within authority_seconds of the expiry.
// AUTHORITY_SECONDS picks the interval (default: the configuration's, 10).
// Needs TEST_DATABASE_URL and TEST_S3_*.
func BenchmarkCrashResume(b *testing.B) {
	authority := time.Duration(config.Default().Worker.AuthoritySeconds) * time.Second
	if v := os.Getenv("AUTHORITY_SECONDS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(b, err)
		authority = time.Duration(n) * time.Second
	}
	for _, kind := range benchStores {
		b.Run(fmt.Sprintf("store=%s/authority=%s", kind, authority), func(b *testing.B) {
			env := newBenchEnv(b, kind, stepScript(4))
			ctx := context.Background()
			sweeps := sweep.NewRunner(env.pool, "bench-control", env.log, metrics.New("bench", 0))
			sweeps.Register(sweep.Sweep{Name: "expire_leases", Interval: authority, Run: func(ctx context.Context) error {
				_, err := env.runs.ExpireLeases(ctx)
				return err
			}})
			sctx, stopSweeps := context.WithCancel(ctx)
			var sw sync.WaitGroup
			for _, t := range sweeps.Tasks() {
				sw.Go(func() { _ = t.Run(sctx) })
			}
			defer func() { stopSweeps(); sw.Wait() }()
			var toExpired, toClaimed, toStep []time.Duration
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				hang := &hangAfterFirst{hung: make(chan struct{}, 1)}
				w1 := env.worker(env.executor(func(base http.RoundTripper) http.RoundTripper { hang.base = base; return hang }), "w1", 1)
				w2 := env.worker(env.executor(nil), "w2", 4)
				stop1 := startWorker(b, w1)
				r, err := env.runs.Start(ctx, env.caller, run.StartInput{AgentID: env.agentID, Input: "go " + strconv.Itoa(i)})
				require.NoError(b, err)
				select {
				case <-hang.hung:
				case <-time.After(30 * time.Second):
					b.Fatal("the first worker never reached its second step")
				}
				// w1 stops claiming (it drains, waiting on its hung attempt,
				// which its next renewal cuts short once the lease ran out),
				// so only w2 can take the run on; w2 starts now, so that w1
				// alone could claim the run.
				stopped1 := make(chan struct{})
				go func() { stop1(); close(stopped1) }()
				stop2 := startWorker(b, w2)
				// The crash falls at a random moment of the sweep's period.
				time.Sleep(rand.N(authority))
				b.StartTimer()
				var expiredAt time.Time
				require.NoError(b, env.pool.QueryRow(ctx, `UPDATE run SET lease_expires_at = now() WHERE id = $1 AND step = 1 RETURNING lease_expires_at`, r.ID).Scan(&expiredAt))
				for {
					var step int32
					require.NoError(b, env.pool.QueryRow(ctx, `SELECT step FROM run WHERE id = $1`, r.ID).Scan(&step))
					if step >= 2 {
						break
					}
					if time.Since(expiredAt) > authority+time.Minute {
						b.Fatalf("run %s did not resume within %s", r.ID, authority+time.Minute)
					}
					time.Sleep(2 * time.Millisecond)
				}
				resumed := time.Since(expiredAt)
				b.StopTimer()
				var ended, claimed time.Time
				require.NoError(b, env.pool.QueryRow(ctx, `SELECT a1.ended_at, a2.started_at FROM run_attempt a1 JOIN run_attempt a2 ON a2.run_id = a1.run_id AND a2.number = 2
					WHERE a1.run_id = $1 AND a1.number = 1 AND a1.status = 'expired'`, r.ID).Scan(&ended, &claimed))
				toExpired = append(toExpired, ended.Sub(expiredAt))
				toClaimed = append(toClaimed, claimed.Sub(expiredAt))
				toStep = append(toStep, resumed)
				<-stopped1
				waitFinished(b, env.pool, 30*time.Second, 10*time.Millisecond)
				stop2()
			}
			b.StopTimer()
			requireSucceeded(b, env.pool, b.N, 4)
			b.ReportMetric(pct(toStep, 50).Seconds(), "resume-p50-s")
			b.ReportMetric(pct(toStep, 100).Seconds(), "resume-max-s")
			b.Logf("store %s, sweep every %s: from the lease's expiry, over %d crashes: sweep ended the attempt p50 %.2f s max %.2f s; "+
				"new attempt claimed p50 %.2f s max %.2f s; its first step committed p50 %.2f s max %.2f s (target %s from the expiry)",
				kind, authority, len(toStep), pct(toExpired, 50).Seconds(), pct(toExpired, 100).Seconds(),
				pct(toClaimed, 50).Seconds(), pct(toClaimed, 100).Seconds(), pct(toStep, 50).Seconds(), pct(toStep, 100).Seconds(), authority)
		})
	}
}
