package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func run(t *testing.T, e *Env, c Command) Result {
	t.Helper()
	res, err := e.Run(context.Background(), c)
	if err != nil {
		t.Fatalf("Run(%q): %v", c.Argv, err)
	}
	return res
}

func TestRunEchoExitCodesAndStdin(t *testing.T) {
	e := newEnv(t, Options{})
	res := run(t, e, Command{Argv: []string{"echo", "hello", "world"}})
	if string(res.Stdout) != "hello world\n" || res.ExitCode != 0 || res.Signal != "" || res.TimedOut {
		t.Fatalf("echo: %+v", res)
	}
	res = run(t, e, Command{Argv: []string{"sh", "-c", "echo out; echo err >&2; exit 7"}})
	if res.ExitCode != 7 || string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" {
		t.Fatalf("exit 7: %+v", res)
	}
	res = run(t, e, Command{Argv: []string{"cat"}, Stdin: []byte("from stdin")})
	if string(res.Stdout) != "from stdin" {
		t.Fatalf("stdin: %q", res.Stdout)
	}
	res = run(t, e, Command{Argv: []string{"cat"}})
	if res.ExitCode != 0 || len(res.Stdout) != 0 {
		t.Fatalf("no stdin: %+v", res)
	}
	// No shell: metacharacters are plain arguments.
	res = run(t, e, Command{Argv: []string{"echo", "$HOME;", "`id`"}})
	if string(res.Stdout) != "$HOME; `id`\n" {
		t.Fatalf("argv went through a shell: %q", res.Stdout)
	}
	// The working directory is the folder; Dir picks a directory inside it.
	res = run(t, e, Command{Argv: []string{"pwd"}})
	if strings.TrimSpace(string(res.Stdout)) != e.Dir() {
		t.Fatalf("pwd %q, want %q", res.Stdout, e.Dir())
	}
	if err := e.WriteFile("sub/run.sh", []byte("#!/bin/sh\npwd\n")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(e.Dir()+"/sub/run.sh", 0o700); err != nil {
		t.Fatal(err)
	}
	res = run(t, e, Command{Argv: []string{"./run.sh"}, Dir: "sub"})
	if strings.TrimSpace(string(res.Stdout)) != e.Dir()+"/sub" {
		t.Fatalf("./run.sh in sub: %+v", res)
	}
	// Files written by a command are visible to the file tools and back.
	run(t, e, Command{Argv: []string{"sh", "-c", "printf made > made.txt"}})
	if got, err := e.ReadFile("made.txt", 0); err != nil || string(got.Data) != "made" {
		t.Fatalf("ReadFile of a command's file: %q, %v", got.Data, err)
	}
	for _, argv := range [][]string{nil, {""}, {"no-such-program-svc"}, {"./missing.sh"}} {
		if _, err := e.Run(context.Background(), Command{Argv: argv}); !errors.Is(err, ErrInvalidCommand) {
			t.Errorf("Run(%q): got %v, want ErrInvalidCommand", argv, err)
		}
	}
	if _, err := e.Run(context.Background(), Command{Argv: []string{"true"}, Env: map[string]string{"A=B": "x"}}); !errors.Is(err, ErrInvalidCommand) {
		t.Errorf("bad variable name: got %v", err)
	}
}

func TestRunEnvironmentIsMinimalAndExplicit(t *testing.T) {
	t.Setenv("SVC_SECRET_FOR_TEST", "leak-svc")
	t.Setenv("DATABASE_URL", "postgres://leak-db")
	e := newEnv(t, Options{})
	res := run(t, e, Command{Argv: []string{"env"}, Env: map[string]string{"GREETING": "hi"}})
	out := string(res.Stdout)
	for _, leak := range []string{"SVC_SECRET_FOR_TEST", "leak-svc", "DATABASE_URL", "leak-db"} {
		if strings.Contains(out, leak) {
			t.Errorf("the command sees %q:\n%s", leak, out)
		}
	}
	want := map[string]string{"PATH": DefaultPath, "HOME": e.Dir(), "LANG": "C.UTF-8", "GREETING": "hi"}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(line, "=")
		got[k] = v
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s=%q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("unexpected variables: %v", got)
	}
	// PATH from Env is the one used to find the program.
	if _, err := e.Run(context.Background(), Command{Argv: []string{"echo"}, Env: map[string]string{"PATH": "/nonexistent"}}); !errors.Is(err, ErrInvalidCommand) {
		t.Errorf("echo found outside the command's PATH: %v", err)
	}
}

func TestRunOutputIsTruncated(t *testing.T) {
	e := newEnv(t, Options{})
	// 1 MiB on each stream, 1 KiB kept: the command must not block on the pipe.
	res := run(t, e, Command{
		Argv:        []string{"sh", "-c", "head -c 1048576 /dev/zero; head -c 1048576 /dev/zero >&2; echo done >&2; exit 3"},
		OutputLimit: 1024,
	})
	if len(res.Stdout) != 1024 || !res.StdoutTruncated || len(res.Stderr) != 1024 || !res.StderrTruncated || res.ExitCode != 3 {
		t.Fatalf("stdout %d %v, stderr %d %v, exit %d", len(res.Stdout), res.StdoutTruncated, len(res.Stderr), res.StderrTruncated, res.ExitCode)
	}
	res = run(t, e, Command{Argv: []string{"printf", "12345"}, OutputLimit: 5})
	if string(res.Stdout) != "12345" || res.StdoutTruncated {
		t.Fatalf("exactly at the limit: %q %v", res.Stdout, res.StdoutTruncated)
	}
}

// gone waits (generously) until the process no longer exists or is a zombie
// nobody reaped yet: either way it runs no more.
func gone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if errors.Is(err, os.ErrNotExist) {
			return
		}
		if err == nil {
			// The state follows the parenthesised command name.
			s := string(b)
			if i := strings.LastIndexByte(s, ')'); i >= 0 && len(s) > i+2 && (s[i+2] == 'Z' || s[i+2] == 'X') {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d still running: %s", pid, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pids reads the pids a command printed, one a line.
func pids(t *testing.T, out []byte) []int {
	t.Helper()
	var ps []int
	for _, f := range strings.Fields(string(out)) {
		p, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("not a pid %q in %q", f, out)
		}
		ps = append(ps, p)
	}
	return ps
}

func TestRunTimeoutKillsTheProcessGroup(t *testing.T) {
	e := newEnv(t, Options{})
	start := time.Now()
	// The shell prints its own pid and its sleeping child's, then waits.
	res := run(t, e, Command{
		Argv:    []string{"sh", "-c", "sleep 300 & echo $$ $!; wait"},
		Timeout: time.Second,
	})
	if !res.TimedOut || res.Signal != "killed" || res.ExitCode != -1 {
		t.Fatalf("time-out: %+v", res)
	}
	if time.Since(start) > 60*time.Second {
		t.Fatalf("Run returned after %v", time.Since(start))
	}
	ps := pids(t, res.Stdout)
	if len(ps) != 2 {
		t.Fatalf("pids: %v", ps)
	}
	for _, p := range ps {
		gone(t, p)
	}
}

func TestRunExitKillsWhatTheCommandLeftRunning(t *testing.T) {
	e := newEnv(t, Options{})
	res := run(t, e, Command{Argv: []string{"sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $!"}})
	if res.ExitCode != 0 || res.TimedOut {
		t.Fatalf("%+v", res)
	}
	gone(t, firstPid(t, res.Stdout))
}

func TestRunContextCancelKillsTheGroup(t *testing.T) {
	e := newEnv(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	if err := e.WriteFile("ready", nil); err != nil {
		t.Fatal(err)
	}
	type out struct {
		res Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := e.Run(ctx, Command{Argv: []string{"sh", "-c", "sleep 300 & echo $$ $! > pids; wait"}, Timeout: 10 * time.Minute})
		done <- out{res, err}
	}()
	// Cancel once the command has written its pids.
	deadline := time.Now().Add(30 * time.Second)
	var ps []int
	for {
		if got, err := e.ReadFile("pids", 0); err == nil && len(strings.Fields(string(got.Data))) == 2 {
			ps = pids(t, got.Data)
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command never wrote its pids")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case o := <-done:
		if !errors.Is(o.err, context.Canceled) || o.res.TimedOut || o.res.Signal != "killed" {
			t.Fatalf("cancelled run: %+v, %v", o.res, o.err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not return after cancellation")
	}
	for _, p := range ps {
		gone(t, p)
	}
}

func TestRunCPULimitEndsABusyLoop(t *testing.T) {
	e := newEnv(t, Options{Limits: Limits{CPUSeconds: 1}})
	res := run(t, e, Command{Argv: []string{"sh", "-c", "while :; do :; done"}, Timeout: 2 * time.Minute})
	if res.TimedOut || (res.Signal != "CPU time limit exceeded" && res.Signal != "killed") {
		t.Fatalf("busy loop: %+v", res)
	}
}

func TestRunLimitsAreSet(t *testing.T) {
	lim := Limits{AddressSpaceBytes: 1 << 30, CPUSeconds: 30, OpenFiles: 64, FileSizeBytes: 1 << 20}
	e := newEnv(t, Options{Limits: lim})
	res := run(t, e, Command{Argv: []string{"sh", "-c", "ulimit -v; ulimit -t; ulimit -n; ulimit -f"}})
	// ulimit reports KiB for -v and 512-byte blocks for -f (POSIX sh; dash and bash agree).
	want := fmt.Sprintf("%d\n30\n64\n%d\n", (1<<30)/1024, (1<<20)/512)
	if string(res.Stdout) != want {
		t.Fatalf("limits in the command:\n%s\nwant:\n%s", res.Stdout, want)
	}
	// Writing past the file-size limit fails.
	res = run(t, e, Command{Argv: []string{"sh", "-c", "head -c 2097152 /dev/zero > big"}})
	if res.ExitCode == 0 && res.Signal == "" {
		t.Fatalf("a 2 MiB file was written under a 1 MiB limit: %+v", res)
	}
	if st, err := os.Stat(e.Dir() + "/big"); err == nil && st.Size() > 1<<20 {
		t.Fatalf("big is %d bytes", st.Size())
	}
}

func TestConcurrentRunsInOneEnvironment(t *testing.T) {
	e := newEnv(t, Options{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			name := fmt.Sprintf("f%d", i)
			res, err := e.Run(context.Background(), Command{
				Argv:  []string{"sh", "-c", `printf "$N" > "$F"; cat "$F"`},
				Env:   map[string]string{"N": strconv.Itoa(i), "F": name},
				Stdin: nil,
			})
			if err != nil || res.ExitCode != 0 || string(res.Stdout) != strconv.Itoa(i) {
				t.Errorf("run %d: %+v, %v", i, res, err)
			}
		})
	}
	wg.Wait()
	l, err := e.List("")
	if err != nil || len(l.Entries) != 8 {
		t.Fatalf("List: %+v, %v", l, err)
	}
}

// A process that leaves the command's process group (setsid) is not killed;
// Run still returns once the group is gone, after pipeGrace, even though the
// escaped process keeps the output pipe open. This documents the limit.
func TestRunReturnsWhenAnEscapedProcessHoldsThePipe(t *testing.T) {
	if _, err := lookPath("setsid", "/", []string{"PATH=" + DefaultPath}); err != nil {
		t.Skip("setsid not installed")
	}
	e := newEnv(t, Options{})
	start := time.Now()
	res := run(t, e, Command{Argv: []string{"sh", "-c", `setsid sh -c 'echo $$ > escaped.tmp; mv escaped.tmp escaped; exec sleep 300' & while [ ! -f escaped ]; do sleep 0.05; done; cat escaped`}})
	escaped := firstPid(t, res.Stdout)
	t.Cleanup(func() { _ = syscall.Kill(escaped, syscall.SIGKILL) })
	if res.ExitCode != 0 {
		t.Fatalf("%+v", res)
	}
	if d := time.Since(start); d < pipeGrace || d > pipeGrace+60*time.Second {
		t.Fatalf("Run returned after %v, want about %v", d, pipeGrace)
	}
}

// BenchmarkRunTrue measures Run's overhead: start, limits, wait and the group kill.
func BenchmarkRunTrue(b *testing.B) {
	p, err := New(enabled, Config{Workdir: b.TempDir()}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	e, err := p.Create("env_01jd5v6w1q3yb8j8y3tn9z2k7h")
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	for b.Loop() {
		if _, err := e.Run(context.Background(), Command{Argv: []string{"true"}}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteFile measures an atomic 64 KiB write (temp file, fsync, rename).
func BenchmarkWriteFile(b *testing.B) {
	p, err := New(enabled, Config{Workdir: b.TempDir()}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	e, err := p.Create("env_01jd5v6w1q3yb8j8y3tn9z2k7h")
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	data := make([]byte, 64<<10)
	for b.Loop() {
		if err := e.WriteFile("f", data); err != nil {
			b.Fatal(err)
		}
	}
}

func TestDestroyKillsRunningCommands(t *testing.T) {
	p, base := newProvider(t, Options{})
	envID := "env_01jd5v6w1q3yb8j8y3tn9z2k7h"
	e, err := p.Create(envID)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	type out struct {
		res Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := e.Run(context.Background(), Command{Argv: []string{"sh", "-c", "sleep 300 & echo $$ $! > pids.tmp; mv pids.tmp pids; wait"}, Timeout: 10 * time.Minute})
		done <- out{res, err}
	}()
	deadline := time.Now().Add(30 * time.Second)
	var ps []int
	for {
		if got, err := e.ReadFile("pids", 0); err == nil {
			ps = pids(t, got.Data)
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command never wrote its pids")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Another Provider value for the same base, as the maintain sweep would have.
	p2, err := New(enabled, Config{Workdir: base}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p2.Destroy(envID); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	select {
	case o := <-done:
		if o.err != nil || o.res.Signal != "killed" {
			t.Fatalf("run in a destroyed environment: %+v, %v", o.res, o.err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not return after Destroy")
	}
	for _, pid := range ps {
		gone(t, pid)
	}
	if _, err := os.Stat(filepath.Join(base, envID)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("folder still there: %v", err)
	}
}

func TestRunAddressSpaceLimitStopsABigAllocation(t *testing.T) {
	e := newEnv(t, Options{Limits: Limits{AddressSpaceBytes: 64 << 20}})
	// The shell holds the whole string in memory: 1 MB fits in 64 MiB, 100 MB doesn't.
	script := `x=$(head -c "$N" /dev/zero | tr "\0" a); echo ${#x}`
	res := run(t, e, Command{Argv: []string{"sh", "-c", script}, Env: map[string]string{"N": "1000000"}})
	if res.ExitCode != 0 || strings.TrimSpace(string(res.Stdout)) != "1000000" {
		t.Fatalf("1 MB under 64 MiB: %+v", res)
	}
	res = run(t, e, Command{Argv: []string{"sh", "-c", script}, Env: map[string]string{"N": "100000000"}})
	if res.ExitCode == 0 && res.Signal == "" {
		t.Fatalf("100 MB under a 64 MiB address-space limit succeeded: %+v", res)
	}
}
