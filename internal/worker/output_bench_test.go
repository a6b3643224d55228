package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/internal/agent"
	"github.com/svcdev/svc/internal/apitest"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/llm/llmtest"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/refcheck"
	"github.com/svcdev/svc/internal/revision"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/skill"
	"github.com/svcdev/svc/internal/testdb"
	"github.com/svcdev/svc/internal/testfactory"
)

// BenchmarkFloodingModelWorkerRSS runs a real worker process (svc run
// --role worker, built from this tree, or BENCH_SVC_BIN) against a model
// server in this process that streams 200 MB of text without ever ending
// its answer, and reports the worker's peak resident memory (VmHWM of its
// /proc status) once the run ended, and the bytes the model managed to
// send. The run must fail with output_limit after one model call.
func BenchmarkFloodingModelWorkerRSS(b *testing.B) {
	const flood = 200 << 20
	model := llmtest.NewChatServer([]llmtest.Turn{{Text: "Here it comes: ", Flood: flood}})
	b.Cleanup(model.Close)
	u, err := url.Parse(model.URL)
	if err != nil {
		b.Fatal(err)
	}
	w := startWorkerProcess(b, u.Port())
	for b.Loop() {
		r, err := w.runs.Start(context.Background(), w.caller, run.StartInput{AgentID: w.agentID, Input: "Write forever."})
		if err != nil {
			b.Fatal(err)
		}
		deadline := time.Now().Add(2 * time.Minute)
		for {
			got, err := w.runs.GetRun(context.Background(), w.caller, r.ID)
			if err != nil {
				b.Fatal(err)
			}
			if got.Status.Finished() {
				if got.Status != run.StatusFailed || got.Error == nil || got.Error.Code != "output_limit" || got.AttemptsUsed != 1 {
					b.Fatalf("run ended %s with %+v after %d attempts", got.Status, got.Error, got.AttemptsUsed)
				}
				break
			}
			if time.Now().After(deadline) {
				raw, _ := os.ReadFile(w.log)
				b.Fatalf("the run did not end:\n%s", raw)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	b.StopTimer()
	if n := len(model.Requests()); n != b.N {
		b.Fatalf("%d model calls for %d runs", n, b.N)
	}
	hwm := w.status(b, "VmHWM")
	b.ReportMetric(float64(hwm)/1024, "peak-rss-MiB")
	b.ReportMetric(float64(model.FloodSent())/float64(b.N)/(1<<20), "model-sent-MiB/run")
	if hwm >= 512<<10 {
		b.Errorf("worker peak RSS %d KiB, want under 512 MiB", hwm)
	}
}

// workerProcess is an svc process of role worker with an agent whose
// model is the local model server.
type workerProcess struct {
	cmd     *exec.Cmd
	log     string
	runs    *run.Service
	caller  *auth.Caller
	agentID string
}

var vmLine = regexp.MustCompile(`(?m)^(\w+):\s+(\d+) kB$`)

// status reads a field of the worker's /proc status, in KiB.
func (p *workerProcess) status(b *testing.B, field string) int64 {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range vmLine.FindAllSubmatch(raw, -1) {
		if string(m[1]) == field {
			n, _ := strconv.ParseInt(string(m[2]), 10, 64)
			return n
		}
	}
	b.Fatalf("no %s in /proc status", field)
	return 0
}

func startWorkerProcess(b *testing.B, modelPort string) *workerProcess {
	b.Helper()
	ctx := context.Background()
	dir := b.TempDir()
	bin := os.Getenv("BENCH_SVC_BIN")
	if bin == "" {
		bin = filepath.Join(dir, "svc")
		if out, err := exec.Command("go", "build", "-o", bin, "github.com/svcdev/svc/cmd/svc").CombinedOutput(); err != nil {
			b.Fatalf("build svc: %v\n%s", err, out)
		}
	}
	dbURL := testdb.NewURL(b)
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	admin := testfactory.Bootstrap(b, pool)
	key := filepath.Join(dir, "keyring.json")
	if err := keyring.Generate(key); err != nil {
		b.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]string{"base_url": "http://127.0.0.1:" + modelPort + "/v1"})
	testfactory.Model(b, pool, admin.Owner(), &testfactory.ModelOpts{Model: "flood-1", Provider: &testfactory.ProviderOpts{Config: cfg}})
	reg, err := catalog.New(catalog.Options{})
	if err != nil {
		b.Fatal(err)
	}
	agents := agent.NewService(pool, reg, refcheck.None{})
	caller := &auth.Caller{PrincipalID: admin.PrincipalID, OrganizationID: admin.OrganizationID, WorkspaceID: admin.WorkspaceID, Role: auth.RoleAdmin}
	head, err := agents.Create(ctx, caller, revision.CreateInput{Name: "flooded",
		Config: json.RawMessage(`{"model":"main","instructions":"Be brief.","limits":{"max_steps":5}}`)})
	if err != nil {
		b.Fatal(err)
	}
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
[endpoint_policy]
allow_http = true
allowed_prefixes = ["127.0.0.0/8"]
allowed_ports = [%s]
[worker]
slots = 1
[log]
format = "json"
`, dbURL, apitest.RedisURL(b), "svc-flood-"+id.New("t")[2:]+":", "file://"+filepath.Join(dir, "objects"), key, modelPort)
	cfgPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(conf), 0o600); err != nil {
		b.Fatal(err)
	}
	logPath := filepath.Join(dir, "svc.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", cfgPath, "run", "--role", "worker")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SVC_") { // only the configuration file applies
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	p := &workerProcess{cmd: cmd, log: logPath, caller: caller, agentID: head.ID,
		runs: run.NewService(pool, agents, skill.NewService(pool, refcheck.None{}), reg, run.Options{MaxAttempts: 3})}
	b.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(40 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		_ = logFile.Close()
	})
	for deadline := time.Now().Add(30 * time.Second); ; {
		raw, _ := os.ReadFile(logPath)
		if strings.Contains(string(raw), `"msg":"svc ready"`) {
			break
		}
		if time.Now().After(deadline) || cmd.ProcessState != nil {
			b.Fatalf("svc did not start:\n%s", raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return p
}
