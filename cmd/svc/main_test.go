package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	schema "github.com/svcdev/svc/sql"
)

// svcBin is the binary TestMain builds once for every test.
var svcBin string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "svc-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "create build directory:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	svcBin = filepath.Join(dir, "svc")
	build := exec.Command("go", "build",
		"-ldflags", "-X github.com/svcdev/svc/internal/buildinfo.Version="+testVersion,
		"-o", svcBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build svc:", err)
		return 1
	}
	return m.Run()
}

// TestVersionAndHelp: --version names the build, the schema it expects and the Go
// release, and neither it nor --help needs any configuration.
func TestVersionAndHelp(t *testing.T) {
	t.Parallel()

	t.Run("version", func(t *testing.T) {
		t.Parallel()
		for _, flag := range []string{"--version", "-v"} {
			r := runSvc(t, nil, flag)
			require.Equal(t, 0, r.code, "%s", r)
			want := regexp.MustCompile(fmt.Sprintf(`^svc %s \(schema %d, go[0-9][^)]*\)\n$`, regexp.QuoteMeta(testVersion), schema.Version()))
			require.Regexp(t, want, r.stdout, "%s", r)
			require.Empty(t, r.stderr, "%s", r)
		}
	})

	t.Run("help", func(t *testing.T) {
		t.Parallel()
		r := runSvc(t, nil, "--help")
		require.Equal(t, 0, r.code, "%s", r)
		for _, s := range []string{"run", "migrate", "keyring", "--config", "--version"} {
			require.Contains(t, r.stdout, s, "%s", r)
		}
		require.Empty(t, r.stderr, "%s", r)

		r = runSvc(t, nil, "run", "--help")
		require.Equal(t, 0, r.code, "%s", r)
		require.Contains(t, r.stdout, "--role", "%s", r)
	})
}

// TestUsageErrors: a mistyped command line exits 2 and explains itself on stderr,
// leaving stdout (machine output) empty; nothing runs.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "keyring.json")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown command", []string{"bogus"}, `unknown command "bogus"`},
		{"unknown role", []string{"run", "--role", "bogus"}, `unknown role "bogus"`},
		{"unknown global flag", []string{"--bogus", "run"}, "bogus"},
		{"unknown command flag", []string{"run", "--bogus"}, "bogus"},
		{"missing flag value", []string{"run", "--role"}, "role"},
		{"keyring generate without --out", []string{"keyring", "generate"}, "--out"},
		{"keyring without subcommand", []string{"keyring"}, "generate"},
		{"keyring unknown subcommand", []string{"keyring", "bogus"}, `"bogus"`},
		{"run extra argument", []string{"run", "extra"}, `"extra"`},
		{"migrate extra argument", []string{"migrate", "extra"}, `"extra"`},
		{"keyring generate extra argument", []string{"keyring", "generate", "--out", out, "extra"}, `"extra"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runSvcWithin(t, refuseTimeout, nil, tc.args...)
			require.Equal(t, 2, r.code, "%s", r)
			require.Empty(t, r.stdout, "%s", r)
			require.Contains(t, r.stderr, tc.want, "%s", r)
			require.Contains(t, r.stderr, "svc --help", "%s", r)
			_, err := os.Stat(out)
			require.ErrorIs(t, err, os.ErrNotExist, "a refused keyring generate must not write its --out file")
		})
	}

	t.Run("no command", func(t *testing.T) {
		t.Parallel()
		r := runSvcWithin(t, refuseTimeout, nil)
		require.Equal(t, 2, r.code, "%s", r)
		require.Contains(t, r.stderr, "no command given", "%s", r)
	})
}

// TestKeyringGenerate: generate writes a private key ring and reports it as JSON;
// it never overwrites an existing ring, which may hold the only copy of the keys.
func TestKeyringGenerate(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "ring.json")

	r := runSvc(t, nil, "keyring", "generate", "--out", out)
	require.Equal(t, 0, r.code, "%s", r)
	var report map[string]string
	dec := json.NewDecoder(bytes.NewReader([]byte(r.stdout)))
	require.NoError(t, dec.Decode(&report), "%s", r)
	require.False(t, dec.More(), "one JSON value on stdout: %s", r)
	require.Equal(t, out, report["key_file"], "%s", r)
	require.Regexp(t, `^k_[0-9a-z]{26}$`, report["primary_key_id"], "%s", r)

	info, err := os.Stat(out)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "key ring file mode")
	before, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Contains(t, string(before), report["primary_key_id"], "the reported key is in the file")

	r = runSvc(t, nil, "keyring", "generate", "--out", out)
	require.Equal(t, 1, r.code, "%s", r)
	require.Empty(t, r.stdout, "%s", r)
	require.Contains(t, r.stderr, "already exists", "%s", r)
	after, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, before, after, "a refused generate must leave the key ring byte-identical")
	info, err = os.Stat(out)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "key ring file mode after the refused run")
}

// TestKeyringGenerateIfMissing: with --if-missing, generate makes the ring when
// the file is absent and keeps a valid existing ring byte for byte, reporting it
// the same way; a file that is not a key ring still fails.
func TestKeyringGenerateIfMissing(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "ring.json")

	report := func(r result) map[string]string {
		t.Helper()
		var rep map[string]string
		dec := json.NewDecoder(bytes.NewReader([]byte(r.stdout)))
		require.NoError(t, dec.Decode(&rep), "%s", r)
		require.False(t, dec.More(), "one JSON value on stdout: %s", r)
		return rep
	}

	r := runSvc(t, nil, "keyring", "generate", "--out", out, "--if-missing")
	require.Equal(t, 0, r.code, "%s", r)
	first := report(r)
	require.Equal(t, out, first["key_file"], "%s", r)
	require.Regexp(t, `^k_[0-9a-z]{26}$`, first["primary_key_id"], "%s", r)
	before, err := os.ReadFile(out)
	require.NoError(t, err)

	r = runSvc(t, nil, "keyring", "generate", "--out", out, "--if-missing")
	require.Equal(t, 0, r.code, "%s", r)
	require.Equal(t, first, report(r), "the kept ring is reported as it is")
	require.Contains(t, r.stderr, "kept as it is", "%s", r)
	after, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, before, after, "an existing key ring is left byte-identical")

	broken := filepath.Join(t.TempDir(), "broken.json")
	require.NoError(t, os.WriteFile(broken, []byte("{}\n"), 0o600))
	r = runSvc(t, nil, "keyring", "generate", "--out", broken, "--if-missing")
	require.Equal(t, 1, r.code, "%s", r)
	require.Empty(t, r.stdout, "%s", r)
	require.Contains(t, r.stderr, broken, "%s", r)
}
