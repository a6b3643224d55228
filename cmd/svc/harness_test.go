package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The harness runs the real svc binary as child processes, the way an operator
// does, and asserts on what they see: exit codes, stdout, stderr and HTTP answers.

const (
	testVersion = "v0.0.0-test"
	// commandTimeout bounds a one-shot command (migrate, keyring).
	commandTimeout = 30 * time.Second
	// refuseTimeout bounds a process that must refuse to start.
	refuseTimeout = 10 * time.Second
	// processTimeout bounds a long-running process; tests stop theirs much
	// sooner. It exceeds the sum of the longest test's waits (about 90 s
	// on a machine loaded enough to reach them all), so it never ends a
	// process a test still needs.
	processTimeout = 2 * time.Minute
	// readyTimeout bounds the wait for a process's "svc ready" record.
	readyTimeout = 20 * time.Second
	// stopTimeout bounds a process's clean stop after SIGTERM or SIGINT. It
	// takes well under a second; the rest is slack for a loaded test machine.
	stopTimeout = 15 * time.Second
)

// childEnv is the environment of a child: this process's environment without any
// SVC_ variable (a stray one would change or break the child's configuration),
// plus exactly the SVC_ variables the test sets.
func childEnv(vars map[string]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SVC_") {
			env = append(env, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		env = append(env, k+"="+vars[k])
	}
	return env
}

// redisURL is the test Redis server; run needs one.
func redisURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("TEST_REDIS_URL")
	if u == "" {
		t.Fatal("TEST_REDIS_URL is not set: this test runs svc processes, which need Redis (for example redis://127.0.0.1:6379/0)")
	}
	return u
}

// runVars is the configuration of a process against database url with key ring
// keyFile (none when empty), listening on a port of the kernel's choice.
func runVars(t testing.TB, url, keyFile string) map[string]string {
	t.Helper()
	vars := map[string]string{
		"SVC_LOG__LEVEL":     "info",
		"SVC_DATABASE__URL":  url,
		"SVC_REDIS__URL":     redisURL(t),
		"SVC_SERVER__LISTEN": "127.0.0.1:0",
	}
	if keyFile != "" {
		vars["SVC_ENCRYPTION__KEY_FILE"] = keyFile
	}
	return vars
}

// dbVars is the configuration of a migrate command against database url.
func dbVars(url string) map[string]string {
	return map[string]string{"SVC_LOG__LEVEL": "info", "SVC_DATABASE__URL": url}
}

// result is how a finished command ended.
type result struct {
	args           []string
	code           int
	stdout, stderr string
	elapsed        time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("svc %s: exit %d after %s\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.code, r.elapsed.Round(time.Millisecond), r.stdout, r.stderr)
}

// runSvc runs a command to completion with the SVC_ variables vars.
func runSvc(t testing.TB, vars map[string]string, args ...string) result {
	t.Helper()
	return runSvcWithin(t, commandTimeout, vars, args...)
}

// runSvcWithin is runSvc with a time limit, for commands expected to end quickly
// (a process that should refuse to start, for example), so that a regression
// fails fast.
func runSvcWithin(t testing.TB, limit time.Duration, vars map[string]string, args ...string) result {
	t.Helper()
	r, err := execSvc(t.TempDir(), limit, vars, args...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// execSvc runs a command to completion in dir, killing it after limit. It does
// not touch a testing.T, so it may run on any goroutine.
func execSvc(dir string, limit time.Duration, vars map[string]string, args ...string) (result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, svcBin, args...)
	cmd.Env = childEnv(vars)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 2 * time.Second
	began := time.Now()
	err := cmd.Run()
	r := result{args: args, stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(began)}
	if ctx.Err() != nil {
		return r, fmt.Errorf("did not finish within %s: %s", limit, r)
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return r, fmt.Errorf("run svc %v: %w", args, err)
	}
	r.code = cmd.ProcessState.ExitCode()
	return r, nil
}

// lockedBuffer collects a running child's output.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// process is a long-running child (svc run).
type process struct {
	t       testing.TB
	args    []string
	cmd     *exec.Cmd
	stdout  lockedBuffer
	stderr  lockedBuffer
	started time.Time
	done    chan struct{}
	code    int // set when done is closed
}

// startSvc starts a long-running command. The child is killed when the test ends
// if it still runs, and its stderr is logged when the test failed.
func startSvc(t testing.TB, vars map[string]string, args ...string) *process {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), processTimeout)
	p := &process{t: t, args: args, done: make(chan struct{})}
	p.cmd = exec.CommandContext(ctx, svcBin, args...)
	p.cmd.Env = childEnv(vars)
	p.cmd.Dir = t.TempDir()
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.cmd.WaitDelay = 2 * time.Second
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start svc %v: %v", args, err)
	}
	go func() {
		_ = p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		cancel()
		if t.Failed() {
			t.Logf("svc %s (exit %d) stderr:\n%s", strings.Join(args, " "), p.code, p.stderr.String())
		}
	})
	return p
}

// exited reports whether the child has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitReady waits for the "svc ready" record on stderr and returns the API
// listener's address from it.
func (p *process) waitReady() string {
	p.t.Helper()
	rec := p.waitReadyRecord()
	addr, _ := rec["listen"].(string)
	require.NotEmpty(p.t, addr, "svc ready record without listen: %v", rec)
	return addr
}

// waitReadyRecord waits for the "svc ready" record on stderr and returns it.
func (p *process) waitReadyRecord() map[string]any {
	p.t.Helper()
	deadline := time.Now().Add(readyTimeout)
	for {
		if rec, ok := findRecord(p.stderr.String(), "svc ready"); ok {
			return rec
		}
		if p.exited() {
			p.t.Fatalf("svc %v exited with code %d before it was ready; stderr:\n%s", p.args, p.code, p.stderr.String())
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("svc %v not ready within %s; stderr:\n%s", p.args, readyTimeout, p.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// signal sends sig to the child.
func (p *process) signal(sig syscall.Signal) {
	p.t.Helper()
	require.NoError(p.t, p.cmd.Process.Signal(sig), "signal svc %v", p.args)
}

// wait waits at most within for the child to end and returns its exit code.
func (p *process) wait(within time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(within):
		p.t.Fatalf("svc %v still running after %s", p.args, within)
		return -1
	}
}

// stop sends sig and waits at most within for the child to end; it returns the
// exit code.
func (p *process) stop(sig syscall.Signal, within time.Duration) int {
	p.t.Helper()
	p.signal(sig)
	return p.wait(within)
}

// records parses the JSON log records in a child's stderr; lines that are not
// JSON objects are skipped.
func records(stderr string) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(stderr))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var rec map[string]any
		if json.Unmarshal(sc.Bytes(), &rec) == nil {
			out = append(out, rec)
		}
	}
	return out
}

// findRecord returns the first record whose msg is msg.
func findRecord(stderr, msg string) (map[string]any, bool) {
	for _, rec := range records(stderr) {
		if rec["msg"] == msg {
			return rec, true
		}
	}
	return nil, false
}

// countRecords counts the records whose msg is msg.
func countRecords(stderr, msg string) int {
	n := 0
	for _, rec := range records(stderr) {
		if rec["msg"] == msg {
			n++
		}
	}
	return n
}

// httpClient opens a new connection per request, so no idle connection outlives
// a test or holds up a child's shutdown.
var httpClient = &http.Client{
	Timeout:   5 * time.Second,
	Transport: &http.Transport{DisableKeepAlives: true},
}

// response is a read HTTP response.
type response struct {
	status int
	header http.Header
	body   []byte
}

func get(t testing.TB, url string) response {
	t.Helper()
	resp, err := httpClient.Get(url)
	require.NoError(t, err, "GET %s", url)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err, "read body of GET %s", url)
	return response{status: resp.StatusCode, header: resp.Header, body: body}
}

// waitReadyz polls GET /readyz at addr until it answers 200 and returns the
// time since the process started.
func (p *process) waitReadyz(addr string) time.Duration {
	p.t.Helper()
	deadline := time.Now().Add(readyTimeout)
	for {
		resp, err := httpClient.Get("http://" + addr + "/readyz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(p.started)
			}
		}
		if p.exited() {
			p.t.Fatalf("svc %v exited with code %d before /readyz answered 200", p.args, p.code)
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("svc %v: /readyz not 200 within %s (last error %v)", p.args, readyTimeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// newKeyRing writes a fresh key ring with `svc keyring generate` and returns its path.
func newKeyRing(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keyring.json")
	r := runSvc(t, nil, "keyring", "generate", "--out", path)
	require.Equal(t, 0, r.code, "%s", r)
	return path
}
