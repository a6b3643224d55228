package local

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/id"
)

var enabled = config.Environments{LocalEnabled: true}

func newProvider(t *testing.T, opts Options) (*Provider, string) {
	t.Helper()
	base := filepath.Join(t.TempDir(), "envs")
	p, err := New(enabled, Config{Workdir: base}, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p, base
}

func newEnv(t *testing.T, opts Options) *Env {
	t.Helper()
	p, _ := newProvider(t, opts)
	e, err := p.Create(id.New(id.Environment))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

func TestNewRefusesWhenDisabledOrInvalid(t *testing.T) {
	if _, err := New(config.Environments{}, Config{Workdir: t.TempDir()}, Options{}); !errors.Is(err, ErrDisabled) {
		t.Fatalf("disabled: got %v, want ErrDisabled", err)
	}
	for name, cfg := range map[string]Config{
		"NoWorkdir":       {},
		"RelativeWorkdir": {Workdir: "envs"},
		"TimeoutTooLong":  {Workdir: t.TempDir(), TimeoutSeconds: MaxTimeoutSeconds + 1},
		"TimeoutNegative": {Workdir: t.TempDir(), TimeoutSeconds: -1},
	} {
		if _, err := New(enabled, cfg, Options{}); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: got %v, want ErrInvalidConfig", name, err)
		}
	}
}

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig([]byte(`{"workdir":"/srv/envs","timeout_seconds":120}`))
	if err != nil || c != (Config{Workdir: "/srv/envs", TimeoutSeconds: 120}) {
		t.Fatalf("ParseConfig: %+v, %v", c, err)
	}
	for _, bad := range []string{`{"workdir":"/x","image":"alpine"}`, `{"workdir":1}`, `[]`, ``} {
		if _, err := ParseConfig([]byte(bad)); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("ParseConfig(%s): got %v, want ErrInvalidConfig", bad, err)
		}
	}
}

func TestCreateOpenDestroy(t *testing.T) {
	p, base := newProvider(t, Options{})
	envID := id.New(id.Environment)
	e, err := p.Create(envID)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	for _, dir := range []string{filepath.Join(base, envID), e.Dir()} {
		st, err := os.Stat(dir)
		if err != nil {
			t.Fatalf("stat %s: %v", dir, err)
		}
		if st.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, want 0700", dir, st.Mode().Perm())
		}
	}
	if got := e.ExpiresAt().Sub(e.CreatedAt()); got != DefaultTimeoutSeconds*time.Second {
		t.Errorf("lifetime %v, want %ds", got, DefaultTimeoutSeconds)
	}
	if err := e.WriteFile("notes/a.txt", []byte("kept")); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	_ = e.Close()

	// A new provider (another worker process after a restart) reopens it by id.
	p2, err := New(enabled, Config{Workdir: base}, Options{})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	e2, err := p2.Open(envID)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	got, err := e2.ReadFile("notes/a.txt", 0)
	if err != nil || string(got.Data) != "kept" {
		t.Fatalf("ReadFile after reopen: %q, %v", got.Data, err)
	}
	if !e2.CreatedAt().Equal(e.CreatedAt()) {
		t.Errorf("CreatedAt changed on reopen: %v != %v", e2.CreatedAt(), e.CreatedAt())
	}
	// Create of an existing environment opens it as it is.
	e3, err := p2.Create(envID)
	if err != nil {
		t.Fatalf("Create again: %v", err)
	}
	if !e3.CreatedAt().Equal(e.CreatedAt()) {
		t.Errorf("Create again reset CreatedAt")
	}
	_ = e3.Close()
	_ = e2.Close()

	if err := p2.Destroy(envID); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	if _, err := os.Stat(filepath.Join(base, envID)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("folder still there after Destroy: %v", err)
	}
	if _, err := p2.Open(envID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Open after Destroy: got %v, want ErrNotFound", err)
	}
	if err := p2.Destroy(envID); err != nil {
		t.Fatalf("Destroy of a missing environment: %v", err)
	}
}

func TestInvalidIDsAreRefused(t *testing.T) {
	p, _ := newProvider(t, Options{})
	for _, bad := range []string{"", "env_", "../../etc", "ws_01jd5v6w1q3yb8j8y3tn9z2k7h",
		"env_../../../../../../../../..", "env_01JD5V6W1Q3YB8J8Y3TN9Z2K7H", "env_01jd5v6w1q3yb8j8y3tn9z2k/h"} {
		if _, err := p.Create(bad); !errors.Is(err, ErrInvalidID) {
			t.Errorf("Create(%q): got %v, want ErrInvalidID", bad, err)
		}
		if err := p.Destroy(bad); !errors.Is(err, ErrInvalidID) {
			t.Errorf("Destroy(%q): got %v, want ErrInvalidID", bad, err)
		}
	}
}

func TestExpiredEnvironmentRefusesCommands(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	base := t.TempDir()
	p, err := New(enabled, Config{Workdir: base, TimeoutSeconds: 60}, Options{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	e, err := p.Create(id.New(id.Environment))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.Run(context.Background(), Command{Argv: []string{"true"}}); err != nil {
		t.Fatalf("Run before expiry: %v", err)
	}
	mu.Lock()
	now = now.Add(60 * time.Second)
	mu.Unlock()
	if !e.Expired() {
		t.Fatal("Expired() = false after the lifetime")
	}
	if _, err := e.Run(context.Background(), Command{Argv: []string{"true"}}); !errors.Is(err, ErrExpired) {
		t.Fatalf("Run after expiry: got %v, want ErrExpired", err)
	}
}

func TestFilesReadWriteList(t *testing.T) {
	e := newEnv(t, Options{})
	if err := e.WriteFile("a.txt", []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := e.WriteFile("a.txt", []byte("two!")); err != nil {
		t.Fatal(err)
	}
	if err := e.WriteFile("sub/dir/b.txt", []byte("bee")); err != nil {
		t.Fatal(err)
	}
	got, err := e.ReadFile("a.txt", 0)
	if err != nil || string(got.Data) != "two!" || got.Truncated || got.Size != 4 {
		t.Fatalf("ReadFile: %+v, %v", got, err)
	}
	st, err := os.Stat(filepath.Join(e.Dir(), "a.txt"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode of written file: %v, %v", st.Mode(), err)
	}
	// Bounded read.
	got, err = e.ReadFile("a.txt", 2)
	if err != nil || string(got.Data) != "tw" || !got.Truncated || got.Size != 4 {
		t.Fatalf("bounded ReadFile: %+v, %v", got, err)
	}
	// No temporary files are left behind, entries are sorted.
	l, err := e.List(".")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ent := range l.Entries {
		names = append(names, ent.Name)
	}
	if strings.Join(names, ",") != "a.txt,sub" || l.Truncated || !l.Entries[1].IsDir || l.Entries[0].Size != 4 {
		t.Fatalf("List: %+v", l)
	}
	if l, err := e.List("sub/dir"); err != nil || len(l.Entries) != 1 || l.Entries[0].Name != "b.txt" {
		t.Fatalf("List sub/dir: %+v, %v", l, err)
	}
	if _, err := e.ReadFile("missing", 0); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ReadFile missing: got %v, want ErrNotExist", err)
	}
	if _, err := e.ReadFile("sub", 0); err == nil {
		t.Fatal("ReadFile of a directory succeeded")
	}
	if err := e.WriteFile("big", make([]byte, MaxWriteBytes+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("WriteFile too large: got %v", err)
	}
}

func TestFilesAreConfinedToTheWorkingFolder(t *testing.T) {
	e := newEnv(t, Options{})
	outside := filepath.Join(filepath.Dir(filepath.Dir(e.Dir())), "outside.txt")
	if err := os.WriteFile(outside, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Links made inside the folder (as a command could) pointing out.
	if err := os.Symlink(outside, filepath.Join(e.Dir(), "abs-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../outside.txt", filepath.Join(e.Dir(), "rel-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(e.Dir(), "dir-link")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"../outside.txt", "../../outside.txt", "a/../../../outside.txt",
		outside, "/etc/passwd", "abs-link", "rel-link", "dir-link/outside.txt"} {
		if _, err := e.ReadFile(name, 0); !errors.Is(err, ErrOutside) {
			t.Errorf("ReadFile(%q): got %v, want ErrOutside", name, err)
		}
	}
	for _, name := range []string{"../outside.txt", "../../outside.txt", "a/../../../outside.txt",
		outside, "/etc/passwd", "dir-link/outside.txt", "dir-link/new.txt"} {
		if err := e.WriteFile(name, []byte("x")); !errors.Is(err, ErrOutside) {
			t.Errorf("WriteFile(%q): got %v, want ErrOutside", name, err)
		}
	}
	// Writing to a link's name replaces the link inside the folder (rename
	// replaces the directory entry); the file it pointed to is untouched.
	for _, name := range []string{"abs-link", "rel-link"} {
		if err := e.WriteFile(name, []byte("replaced")); err != nil {
			t.Errorf("WriteFile(%q): %v", name, err)
		}
		if st, err := os.Lstat(filepath.Join(e.Dir(), name)); err != nil || !st.Mode().IsRegular() {
			t.Errorf("%s is not a regular file after WriteFile: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(outside), "new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file was created outside: %v", err)
	}
	for _, name := range []string{"..", "/", "dir-link", "../.."} {
		if _, err := e.List(name); !errors.Is(err, ErrOutside) {
			t.Errorf("List(%q): got %v, want ErrOutside", name, err)
		}
	}
	if _, err := e.Run(context.Background(), Command{Argv: []string{"true"}, Dir: "dir-link"}); !errors.Is(err, ErrOutside) {
		t.Errorf("Run in dir-link: got %v, want ErrOutside", err)
	}
	if b, _ := os.ReadFile(outside); string(b) != "secret" {
		t.Fatalf("the outside file changed: %q", b)
	}
	// A link that stays inside is followed; `..` that stays inside is fine.
	if err := e.WriteFile("d/target", []byte("in")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("d/target", filepath.Join(e.Dir(), "in-link")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"in-link", "d/../d/target"} {
		if got, err := e.ReadFile(name, 0); err != nil || string(got.Data) != "in" {
			t.Errorf("ReadFile(%q): %q, %v", name, got.Data, err)
		}
	}
}

func TestConcurrentWritesAreAtomic(t *testing.T) {
	e := newEnv(t, Options{})
	a, b := []byte(strings.Repeat("a", 1<<20)), []byte(strings.Repeat("b", 1<<20))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			data := a
			if i%2 == 1 {
				data = b
			}
			for range 5 {
				if err := e.WriteFile("f", data); err != nil {
					t.Errorf("WriteFile: %v", err)
				}
			}
		})
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			got, err := e.ReadFile("f", 2<<20)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				t.Errorf("ReadFile: %v", err)
				return
			}
			if s := string(got.Data); s != string(a) && s != string(b) {
				t.Errorf("read a mixed or partial file of %d bytes", len(s))
				return
			}
		}
	})
	wg.Wait()
	close(stop)
	readers.Wait()
	l, err := e.List("")
	if err != nil || len(l.Entries) != 1 {
		t.Fatalf("temporary files left: %+v, %v", l, err)
	}
}

// helper: the pid a shell printed on its first stdout line.
func firstPid(t *testing.T, out []byte) int {
	t.Helper()
	line, _, _ := strings.Cut(string(out), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("no pid in output %q", out)
	}
	return pid
}
