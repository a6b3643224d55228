package worker_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/multitracer"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/tool"
	"github.com/svcdev/svc/internal/tracing"
	"github.com/svcdev/svc/internal/worker"
)

// BenchmarkStepTracing is BenchmarkStepOverhead on the file store with
// tracing off and on. On, every run is started within a span, as a traced
// request starts it, and every trace is sampled (tracing.sample_ratio 1):
// the attempt, its steps, model calls, tool calls and queries are spans,
// exported in batches over OTLP/HTTP (gzip) to a collector that reads and
// discards them. Reported: the engine's overhead per step (p50, p99) and
// the CPU per step, whose difference between the two is what tracing
// costs. Needs TEST_DATABASE_URL.
func BenchmarkStepTracing(b *testing.B) {
	const steps = 20
	for _, on := range []bool{false, true} {
		name := "tracing=off"
		if on {
			name = "tracing=on"
		}
		b.Run(name, func(b *testing.B) {
			provider := tracing.Off()
			var exported, spans atomic.Int64
			if on {
				collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					n, _ := io.Copy(io.Discard, r.Body)
					exported.Add(n)
				}))
				b.Cleanup(collector.Close)
				cfg := config.Default().Tracing
				cfg.OTLPEndpoint = collector.URL
				var err error
				provider, err = tracing.New(cfg, tracing.Process{Version: "bench", Role: "all", ReplicaID: "rep_bench"}, slog.New(slog.DiscardHandler))
				require.NoError(b, err)
				provider.SDK().RegisterSpanProcessor(&spanCounter{n: &spans})
			}
			env := newBenchEnv(b, "file", stepScript(steps), func(c *pgxpool.Config) {
				if pt := provider.PoolTracer(); pt != nil {
					c.ConnConfig.Tracer = multitracer.New(c.ConnConfig.Tracer, pt)
				}
			})
			tracer := provider.Tracer("github.com/svcdev/svc/internal/worker")
			rec := &callRecorder{}
			client := *env.policy.HTTPClient(0)
			rec.base = client.Transport
			if rec.base == nil {
				rec.base = http.DefaultTransport
			}
			client.Transport = rec
			exec := worker.NewExecutor(readers(worker.ExecutorDeps{Runs: env.runs, Objects: env.store, HTTPClient: &client,
				Toolsets: []tool.Toolset{lookupTool(&atomic.Int32{})}, Log: env.log, Tracer: tracer}, env.pool, env.reg, env.ring))
			wcfg := config.Default().Worker
			stop := startWorker(b, worker.New(env.pool, env.runs, exec, worker.Options{ID: "bench", Slots: 1,
				Lease: time.Duration(wcfg.LeaseSeconds) * time.Second, Drain: time.Duration(wcfg.DrainSeconds) * time.Second,
				Gather: time.Duration(wcfg.ClaimGatherMS) * time.Millisecond, Tracer: tracer}, env.log))
			// After the worker stopped: its last spans ended.
			b.Cleanup(func() { stop(); _ = provider.Shutdown(context.Background()) })

			var gaps []time.Duration
			cpu0 := cpuTime(b)
			b.ResetTimer()
			for i := range b.N {
				ctx := context.Background()
				var span trace.Span
				if tracer != nil {
					ctx, span = tracer.Start(ctx, "request")
				}
				before := len(rec.calls())
				r, err := env.runs.Start(ctx, env.caller, run.StartInput{AgentID: env.agentID, Input: "go " + strconv.Itoa(i)})
				if span != nil {
					span.End()
				}
				require.NoError(b, err)
				var got run.Run
				for {
					got, err = env.runs.GetRun(context.Background(), env.caller, r.ID)
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
				}
			}
			require.NoError(b, provider.ForceFlush(context.Background()))
			b.StopTimer()
			cpu := cpuTime(b) - cpu0
			b.ReportMetric(ms(cpu)/float64(b.N*steps), "cpu-ms/step")
			b.ReportMetric(ms(pct(gaps, 50)), "overhead-p50-ms/step")
			b.ReportMetric(ms(pct(gaps, 99)), "overhead-p99-ms/step")
			b.ReportMetric(float64(exported.Load())/float64(b.N*steps), "exported-B/step")
			b.ReportMetric(float64(spans.Load())/float64(b.N*steps), "spans/step")
			b.Logf("%s: %d tool steps: overhead p50 %.2f ms p90 %.2f p99 %.2f; cpu %.2f ms/step; %d spans, exported %d bytes",
				name, len(gaps), ms(pct(gaps, 50)), ms(pct(gaps, 90)), ms(pct(gaps, 99)), ms(cpu)/float64(b.N*steps), spans.Load(), exported.Load())
		})
	}
}

// spanCounter counts the spans that ended.
type spanCounter struct{ n *atomic.Int64 }

func (c *spanCounter) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (c *spanCounter) OnEnd(sdktrace.ReadOnlySpan)                     { c.n.Add(1) }
func (c *spanCounter) Shutdown(context.Context) error                  { return nil }
func (c *spanCounter) ForceFlush(context.Context) error                { return nil }
