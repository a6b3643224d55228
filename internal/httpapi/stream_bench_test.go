package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/svcdev/svc/internal/agent"
	"github.com/svcdev/svc/internal/apitest"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/refcheck"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/skill"
	"github.com/svcdev/svc/internal/stream"
	"github.com/svcdev/svc/internal/testdb"
	"github.com/svcdev/svc/internal/testfactory"
)

// Targets of docs/performance.md ("Thread streams").
const (
	benchStreamClients = 2000
	maxStreamsRSSMiB   = 200
	benchLiveRounds    = 3
)

// BenchmarkThreadStreams opens 2,000 SSE clients on one `svc run --role
// control` process (built from this tree and run as a child, so its resident
// set holds the server only) and reads its VmRSS and peak VmHWM from /proc:
// idle after setup, with every client connected and caught up on the
// history, and after live rounds in which every thread's run emits an event
// that every client must receive, in order, through Redis. It fails when the
// peak passes 200 MiB or an event is lost. "OneThread": all clients follow
// one thread; "ThreadEach": each follows a thread of its own (2,000 tails in
// the hub's shared XREAD).
//
//	make bench/streams
func BenchmarkThreadStreams(b *testing.B) {
	b.Run("OneThread", func(b *testing.B) { benchStreams(b, benchStreamClients, 1) })
	b.Run("ThreadEach", func(b *testing.B) { benchStreams(b, benchStreamClients, benchStreamClients) })
}

func benchStreams(b *testing.B, clients, threads int) {
	for range b.N {
		srv := startSVC(b)
		base := srv.setup(b, threads)
		idle := srv.rss(b)

		hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, DisableCompression: true}}
		ctx, cancel := context.WithCancel(context.Background())
		var caughtUp, received, wrong atomic.Int64
		var wg sync.WaitGroup
		began := time.Now()
		for i := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				follow(ctx, hc, srv.url+"/api/v1/threads/"+base.threads[i%threads]+"/stream", srv.token, &caughtUp, &received, &wrong)
			}()
		}
		waitFor(b, func() bool { return caughtUp.Load() == int64(clients) }, 120*time.Second, "clients caught up", &caughtUp)
		connectTime := time.Since(began)
		time.Sleep(2 * time.Second)
		connected := srv.rss(b)

		liveBegan := time.Now()
		base.live(b, benchLiveRounds)
		want := int64(clients) * (2 + benchLiveRounds) // accepted, running, the deltas
		waitFor(b, func() bool { return received.Load() >= want }, 120*time.Second, "live events delivered", &received)
		liveTime := time.Since(liveBegan)
		time.Sleep(time.Second)
		after := srv.rss(b)
		cancel()
		wg.Wait()
		hc.CloseIdleConnections()
		srv.stop(b)

		if n := wrong.Load(); n > 0 || received.Load() != want {
			b.Fatalf("%d frames out of order; %d events received, want %d", n, received.Load(), want)
		}
		perStream := float64(connected.rss-idle.rss) / float64(clients)
		b.ReportMetric(float64(idle.rss)/1024, "idle-RSS-MiB")
		b.ReportMetric(float64(connected.rss)/1024, "connected-RSS-MiB")
		b.ReportMetric(float64(after.rss)/1024, "live-RSS-MiB")
		b.ReportMetric(float64(after.hwm)/1024, "peak-RSS-MiB")
		b.ReportMetric(perStream, "KiB/stream")
		b.ReportMetric(connected.goroutines, "goroutines")
		b.ReportMetric(connected.stack/(1<<20), "connected-stack-MiB")
		b.ReportMetric(connected.heapInuse/(1<<20), "connected-heap-inuse-MiB")
		b.ReportMetric(after.stack/(1<<20), "live-stack-MiB")
		b.ReportMetric(after.heapInuse/(1<<20), "live-heap-inuse-MiB")
		b.ReportMetric(connectTime.Seconds(), "connect-s")
		b.ReportMetric(liveTime.Seconds(), "live-s")
		if after.hwm/1024 >= maxStreamsRSSMiB {
			b.Errorf("peak RSS %d KiB with %d streams, target < %d MiB", after.hwm, clients, maxStreamsRSSMiB)
		}
	}
}

// follow reads one stream until ctx ends, counting events and order faults.
func follow(ctx context.Context, hc *http.Client, url, token string, caughtUp, received, wrong *atomic.Int64) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		wrong.Add(1)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		wrong.Add(1)
		return
	}
	r := bufio.NewReaderSize(resp.Body, 1024)
	var last int64
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return
		}
		if !bytes.HasPrefix(line, []byte("id: ")) {
			continue
		}
		seq, err := strconv.ParseInt(string(bytes.TrimSpace(line[4:])), 10, 64)
		if err != nil || seq != last+1 {
			wrong.Add(1)
		}
		last = seq
		received.Add(1)
		if seq == 1 {
			caughtUp.Add(1)
		}
	}
}

func waitFor(b *testing.B, cond func() bool, limit time.Duration, what string, n *atomic.Int64) {
	b.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("%s: timed out at %d", what, n.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// svcProcess is a child `svc run --role control`.
type svcProcess struct {
	cmd     *exec.Cmd
	url     string
	metrics string
	token   string
	pool    *pgxpool.Pool
	rdb     *redis.Client
	prefix  string
	log     string
}

var (
	readyListen  = regexp.MustCompile(`"msg":"svc ready".*"listen":"([^"]+)"`)
	readyMetrics = regexp.MustCompile(`"msg":"svc ready".*"metrics_listen":"([^"]+)"`)
	goMetricLine = regexp.MustCompile(`(?m)^(go_goroutines|go_memstats_heap_inuse_bytes|go_memstats_stack_inuse_bytes|go_memstats_heap_alloc_bytes) ([0-9.e+]+)$`)
)

func startSVC(b *testing.B) *svcProcess {
	b.Helper()
	dir := b.TempDir()
	bin := os.Getenv("BENCH_SVC_BIN")
	if bin == "" {
		bin = filepath.Join(dir, "svc")
		out, err := exec.Command("go", "build", "-o", bin, "github.com/svcdev/svc/cmd/svc").CombinedOutput()
		if err != nil {
			b.Fatalf("build svc: %v\n%s", err, out)
		}
	}
	dbURL := testdb.NewURL(b)
	pool, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	admin := testfactory.Bootstrap(b, pool)
	key := filepath.Join(dir, "keyring.json")
	if err := keyring.Generate(key); err != nil {
		b.Fatal(err)
	}
	redisURL := apitest.RedisURL(b)
	prefix := "svc-bench-" + id.New("t")[2:] + ":"
	cfg := filepath.Join(dir, "config.toml")
	conf := fmt.Sprintf(`[server]
listen = "127.0.0.1:0"
[database]
url = %q
auto_migrate = false
[redis]
url = %q
key_prefix = %q
[object_store]
url = %q
[encryption]
key_file = %q
[metrics]
listen = "127.0.0.1:0"
[limits]
api_requests_per_key_per_minute = 1000000000
[log]
level = "warn"
format = "json"
`, dbURL, redisURL, prefix, "file://"+filepath.Join(dir, "objects"), key)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		b.Fatal(err)
	}
	logPath := filepath.Join(dir, "svc.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", cfg, "run", "--role", "control")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Only the configuration file applies (SVC_ variables would override it),
	// but at info level: the ready line names the listen address.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SVC_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "SVC_LOG__LEVEL=info")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	p := &svcProcess{cmd: cmd, token: admin.APIKey, pool: pool, prefix: prefix, log: logPath}
	b.Cleanup(func() { p.stop(b); _ = logFile.Close() })
	deadline := time.Now().Add(30 * time.Second)
	for p.url == "" {
		raw, _ := os.ReadFile(logPath)
		if m := readyListen.FindSubmatch(raw); m != nil {
			p.url = "http://" + string(m[1])
			if m := readyMetrics.FindSubmatch(raw); m != nil {
				p.metrics = "http://" + string(m[1]) + "/metrics"
			}
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("svc did not start:\n%s", raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		b.Fatal(err)
	}
	p.rdb = redis.NewClient(opts)
	b.Cleanup(func() { _ = p.rdb.Close() })
	return p
}

func (p *svcProcess) stop(b *testing.B) {
	if p.cmd.ProcessState != nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(40 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
		b.Errorf("svc did not stop on SIGTERM")
	}
}

// memory is a VmRSS and VmHWM reading in KiB, with the Go runtime's view
// (from the process's /metrics) in bytes.
type memory struct {
	rss, hwm                               int64
	goroutines, heapInuse, stack, heapLive float64
}

// goStats reads the Go runtime's figures from the process's /metrics.
func (p *svcProcess) goStats(m *memory) {
	if p.metrics == "" {
		return
	}
	resp, err := http.Get(p.metrics)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	for _, g := range goMetricLine.FindAllSubmatch(raw, -1) {
		v, _ := strconv.ParseFloat(string(g[2]), 64)
		switch string(g[1]) {
		case "go_goroutines":
			m.goroutines = v
		case "go_memstats_heap_inuse_bytes":
			m.heapInuse = v
		case "go_memstats_stack_inuse_bytes":
			m.stack = v
		case "go_memstats_heap_alloc_bytes":
			m.heapLive = v
		}
	}
}

func (p *svcProcess) rss(b *testing.B) memory {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	var m memory
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			m.rss = n
		case "VmHWM:":
			m.hwm = n
		}
	}
	p.goStats(&m)
	return m
}

// post sends a JSON POST as the admin and decodes the answer.
func (p *svcProcess) post(b *testing.B, path string, body any, want int) map[string]any {
	b.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, p.url+path, bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bearer "+p.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		b.Fatalf("POST %s: %d %s", path, resp.StatusCode, out)
	}
	var v map[string]any
	_ = json.Unmarshal(out, &v)
	return v
}

// benchThreads are the threads a bench follows, each with an accepted run.
type benchThreads struct {
	p       *svcProcess
	threads []string
}

// setup makes a model, an agent and threads threads, each with a run.
func (p *svcProcess) setup(b *testing.B, threads int) *benchThreads {
	b.Helper()
	prv := p.post(b, "/api/v1/model-providers", map[string]any{"type": "openai", "name": "bench", "credential": map[string]any{"api_key": "sk-bench"}}, http.StatusCreated)
	p.post(b, "/api/v1/models", map[string]any{"key": "main", "provider_id": prv["id"], "api": "chat_completions", "model": "gpt-4.1-mini"}, http.StatusCreated)
	ag := p.post(b, "/api/v1/agents", map[string]any{"name": "bench", "config": map[string]any{"model": "main"}}, http.StatusCreated)
	out := &benchThreads{p: p, threads: make([]string, threads)}
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < threads; i = int(next.Add(1) - 1) {
				r := p.post(b, "/api/v1/runs", map[string]any{"agent_id": ag["id"], "input": "bench"}, http.StatusAccepted)
				out.threads[i] = r["thread_id"].(string)
			}
		}()
	}
	wg.Wait()
	return out
}

// live claims every run as a worker would and emits rounds deltas on each,
// publishing through Redis to the process's streams.
func (t *benchThreads) live(b *testing.B, rounds int) {
	b.Helper()
	ctx := context.Background()
	reg, err := catalog.New(catalog.Options{})
	if err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	w := run.NewService(t.p.pool, agent.NewService(t.p.pool, reg, refcheck.None{}), skill.NewService(t.p.pool, refcheck.None{}), reg,
		run.Options{MaxAttempts: 3, Publisher: stream.NewPublisher(t.p.rdb, t.p.prefix, log)})
	var leases []run.Lease
	for {
		claims, err := w.Claim(ctx, "bench-worker", 200, 10*time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		if len(claims) == 0 {
			break
		}
		for _, c := range claims {
			leases = append(leases, c.Lease)
		}
	}
	if len(leases) != len(t.threads) {
		b.Fatalf("claimed %d runs, want %d", len(leases), len(t.threads))
	}
	for round := range rounds {
		var wg sync.WaitGroup
		next := atomic.Int64{}
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := int(next.Add(1) - 1); i < len(leases); i = int(next.Add(1) - 1) {
					if err := w.Emit(ctx, leases[i], []run.NewEvent{{Type: run.EventMessageDelta, Data: run.DeltaData{Text: fmt.Sprint("round ", round)}}}); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
}
