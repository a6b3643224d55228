package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/password"
	"github.com/svcdev/svc/internal/testdb"
)

// The operator commands bootstrap and user, run as an operator runs them.

const (
	opsEmail    = "ops@example.com"
	opsPassword = "correct horse battery"
)

// bootstrapReport is what bootstrap prints on stdout.
type bootstrapReport struct {
	OrganizationID string `json:"organization_id"`
	WorkspaceID    string `json:"workspace_id"`
	UserID         string `json:"user_id"`
	PrincipalID    string `json:"principal_id"`
	APIKey         string `json:"api_key"`
}

// runSvcInput is runSvc with stdin as standard input.
func runSvcInput(t testing.TB, vars map[string]string, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, svcBin, args...)
	cmd.Env = childEnv(vars)
	cmd.Dir = t.TempDir()
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	began := time.Now()
	err := cmd.Run()
	r := result{args: args, stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(began)}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run svc %v: %v", args, err)
	}
	r.code = cmd.ProcessState.ExitCode()
	return r
}

func bootstrap(t testing.TB, url string) (bootstrapReport, result) {
	t.Helper()
	r := runSvcInput(t, dbVars(url), opsPassword+"\n", "bootstrap", "--email", opsEmail, "--password-stdin")
	require.Equal(t, 0, r.code, "%s", r)
	var rep bootstrapReport
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&rep), "%s", r)
	require.False(t, dec.More(), "one JSON value on stdout: %s", r)
	return rep, r
}

// identityCounts counts the rows of every identity table.
func identityCounts(t testing.TB, url string) map[string]int {
	t.Helper()
	conn := connect(t, url)
	out := map[string]int{}
	for _, table := range []string{"organization", "workspace", "principal", "user_account", "organization_member", "workspace_member", "api_key", "audit_event"} {
		var n int
		require.NoError(t, conn.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n))
		out[table] = n
	}
	return out
}

// getMe calls GET /api/v1/me at addr with token and returns the status and body.
func getMe(t testing.TB, addr, token string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/api/v1/me", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := httpClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return resp.StatusCode, body
}

// TestBootstrap: bootstrap prints the new ids and a key that works against a
// running process at once; a second bootstrap exits 3 and changes nothing.
func TestBootstrap(t *testing.T) {
	t.Parallel()
	url := testdb.NewURL(t)
	rep, r := bootstrap(t, url)
	for prefix, v := range map[string]string{"org": rep.OrganizationID, "ws": rep.WorkspaceID, "usr": rep.UserID, "pri": rep.PrincipalID} {
		require.Regexp(t, "^"+prefix+"_[0-9a-z]{26}$", v)
	}
	require.Regexp(t, `^svc_[0-9A-Za-z]{49}$`, rep.APIKey)
	require.NotContains(t, r.stderr, opsPassword)
	require.NotContains(t, r.stderr, rep.APIKey)

	// Only the argon2id hash of the password is stored, and it verifies.
	var hash string
	require.NoError(t, connect(t, url).QueryRow(context.Background(), "SELECT password_hash FROM user_account WHERE id = $1", rep.UserID).Scan(&hash))
	require.True(t, strings.HasPrefix(hash, "$argon2id$"), hash)
	ok, err := password.Verify(opsPassword, hash)
	require.NoError(t, err)
	require.True(t, ok)

	p := startSvc(t, runVars(t, url, newKeyRing(t)), "run")
	addr := p.waitReady()
	code, me := getMe(t, addr, rep.APIKey)
	require.Equal(t, http.StatusOK, code, "%v", me)
	require.Equal(t, "admin", me["role"])
	require.Equal(t, "owner", me["organization_role"])
	require.Equal(t, rep.WorkspaceID, me["workspace"].(map[string]any)["id"])
	require.Equal(t, rep.PrincipalID, me["principal"].(map[string]any)["id"])
	require.Equal(t, opsEmail, me["user"].(map[string]any)["email"])

	before := identityCounts(t, url)
	for _, stdin := range []string{opsPassword + "\n", ""} {
		r := runSvcInput(t, dbVars(url), stdin, "bootstrap", "--email", "second@example.com", "--password-stdin")
		require.Equal(t, 3, r.code, "%s", r)
		require.Empty(t, r.stdout, "%s", r)
		require.Contains(t, r.stderr, "already initialized", "%s", r)
	}
	require.Equal(t, before, identityCounts(t, url), "a refused bootstrap changes nothing")
}

// TestConcurrentBootstraps: of several bootstraps at once, exactly one wins;
// the others exit 3 and the database holds one organization.
func TestConcurrentBootstraps(t *testing.T) {
	t.Parallel()
	url := testdb.NewURL(t)
	const n = 4
	results := make([]result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, svcBin, "bootstrap", "--email", fmt.Sprintf("ops%d@example.com", i), "--password-stdin")
			cmd.Env = childEnv(dbVars(url))
			cmd.Stdin = strings.NewReader(opsPassword + "\n")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				errs[i] = err
				return
			}
			results[i] = result{args: cmd.Args[1:], code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
		}()
	}
	wg.Wait()
	codes := map[int]int{}
	for i, r := range results {
		require.NoError(t, errs[i])
		codes[r.code]++
		if r.code == 3 {
			require.Empty(t, r.stdout, "%s", r)
		}
	}
	require.Equal(t, map[int]int{0: 1, 3: n - 1}, codes, "%v", results)
	counts := identityCounts(t, url)
	require.Equal(t, 1, counts["organization"])
	require.Equal(t, 1, counts["user_account"])
	require.Equal(t, 1, counts["api_key"])
}

// TestBootstrapInvalidInput: invalid input exits 1 with a message and writes
// nothing; a missing --email is a usage error (2).
func TestBootstrapInvalidInput(t *testing.T) {
	t.Parallel()
	url := testdb.NewURL(t)
	cases := []struct {
		name, email, stdin string
		stdinFlag          bool
		want               string
	}{
		{"bad e-mail", "not-an-address", opsPassword + "\n", true, "not a valid e-mail address"},
		{"display name", "Ops <ops@example.com>", opsPassword + "\n", true, "not a valid e-mail address"},
		{"short password", opsEmail, "short\n", true, "at least 8 characters"},
		{"empty password", opsEmail, "\n", true, "at least 8 characters"},
		{"no input", opsEmail, "", true, "no password on standard input"},
		{"too long", opsEmail, strings.Repeat("x", password.MaxLength+1) + "\n", true, "at most"},
		{"not a terminal", opsEmail, opsPassword + "\n", false, "--password-stdin"},
	}
	for _, tc := range cases {
		args := []string{"bootstrap", "--email", tc.email}
		if tc.stdinFlag {
			args = append(args, "--password-stdin")
		}
		r := runSvcInput(t, dbVars(url), tc.stdin, args...)
		require.Equal(t, 1, r.code, "%s: %s", tc.name, r)
		require.Empty(t, r.stdout, "%s: %s", tc.name, r)
		require.Contains(t, r.stderr, tc.want, "%s: %s", tc.name, r)
		require.NotContains(t, r.stderr, opsPassword, "%s", tc.name)
	}
	r := runSvcInput(t, dbVars(url), opsPassword+"\n", "bootstrap", "--password-stdin")
	require.Equal(t, 2, r.code, "%s", r)
	require.Contains(t, r.stderr, "--email", "%s", r)
	require.Zero(t, identityCounts(t, url)["organization"], "refused bootstraps write nothing")

	// A password line ending in CRLF loses both characters, nothing more.
	r = runSvcInput(t, dbVars(url), " spaced out pw \r\nsecond line\n", "bootstrap", "--email", opsEmail, "--password-stdin")
	require.Equal(t, 0, r.code, "%s", r)
	var hash string
	require.NoError(t, connect(t, url).QueryRow(context.Background(), "SELECT password_hash FROM user_account").Scan(&hash))
	ok, err := password.Verify(" spaced out pw ", hash)
	require.NoError(t, err)
	require.True(t, ok, "the first line, without its CRLF, is the password")
}

// TestOperatorCommandsRefuseSchemaMismatch: bootstrap and user refuse a database
// whose schema is not this binary's, older or newer, and change nothing.
func TestOperatorCommandsRefuseSchemaMismatch(t *testing.T) {
	t.Parallel()
	empty := testdb.Empty(t)
	newer := testdb.NewURL(t)
	_, err := connect(t, newer).Exec(context.Background(), "INSERT INTO goose_db_version (version_id, is_applied) VALUES (99999, true)")
	require.NoError(t, err)
	for _, url := range []string{empty, newer} {
		for _, args := range [][]string{
			{"bootstrap", "--email", opsEmail, "--password-stdin"},
			{"user", "disable", "--email", opsEmail},
			{"user", "enable", "--email", opsEmail},
		} {
			r := runSvcInput(t, dbVars(url), opsPassword+"\n", args...)
			require.Equal(t, 1, r.code, "%s", r)
			require.Empty(t, r.stdout, "%s", r)
			require.Contains(t, r.stderr, "schema does not match", "%s", r)
			require.Contains(t, r.stderr, "svc migrate", "%s", r)
		}
	}
	requireEmptyDatabase(t, empty)
	require.Zero(t, identityCounts(t, newer)["organization"])
}

// TestUserDisableEnable: a disabled user's key is refused by a running process
// within seconds; enable gives it back; both are idempotent and audited.
func TestUserDisableEnable(t *testing.T) {
	t.Parallel()
	url := testdb.NewURL(t)
	rep, _ := bootstrap(t, url)
	p := startSvc(t, runVars(t, url, newKeyRing(t)), "run")
	addr := p.waitReady()
	code, _ := getMe(t, addr, rep.APIKey)
	require.Equal(t, http.StatusOK, code, "the key works, and the process caches it")
	version := func() int {
		var v int
		require.NoError(t, connect(t, url).QueryRow(context.Background(), "SELECT version FROM user_account WHERE id = $1", rep.UserID).Scan(&v))
		return v
	}
	// waitStatus polls until the key gets want and returns how long it took.
	waitStatus := func(want int) time.Duration {
		began := time.Now()
		for {
			code, _ := getMe(t, addr, rep.APIKey)
			if code == want {
				return time.Since(began)
			}
			// Other processes apply a disable within the key cache's 2 s; the
			// rest is slack for a loaded test machine.
			require.Less(t, time.Since(began), 2*time.Second+5*time.Second, "key still answered %d, want %d", code, want)
			time.Sleep(50 * time.Millisecond)
		}
	}
	userState := func(args ...string) map[string]any {
		t.Helper()
		r := runSvc(t, dbVars(url), args...)
		require.Equal(t, 0, r.code, "%s", r)
		var out map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), "%s", r)
		return out
	}

	out := userState("user", "disable", "--email", "OPS@example.com")
	require.Equal(t, map[string]any{"user_id": rep.UserID, "email": opsEmail, "disabled": true}, out)
	t.Logf("disable applied in the running process after %s", waitStatus(http.StatusUnauthorized))
	require.Equal(t, 2, version())

	require.Equal(t, true, userState("user", "disable", "--email", opsEmail)["disabled"], "a second disable succeeds")
	require.Equal(t, 2, version(), "and changes nothing")

	require.Equal(t, false, userState("user", "enable", "--email", opsEmail)["disabled"])
	t.Logf("enable applied in the running process after %s", waitStatus(http.StatusOK))
	code, me := getMe(t, addr, rep.APIKey)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "admin", me["role"], "the same key with the same grants")
	require.Equal(t, false, userState("user", "enable", "--email", opsEmail)["disabled"])
	require.Equal(t, 3, version())

	var events int
	require.NoError(t, connect(t, url).QueryRow(context.Background(),
		"SELECT count(*) FROM audit_event WHERE action IN ('user.disabled', 'user.enabled') AND actor_id IS NULL AND subject_id = $1", rep.UserID).Scan(&events))
	require.Equal(t, 2, events, "one event per change, none for the repeats")

	r := runSvc(t, dbVars(url), "user", "disable", "--email", "nobody@example.com")
	require.Equal(t, 1, r.code, "%s", r)
	require.Empty(t, r.stdout)
	require.Contains(t, r.stderr, "no user account has this e-mail address: nobody@example.com", "%s", r)
	for _, args := range [][]string{{"user", "disable"}, {"user"}, {"user", "bogus"}, {"user", "enable", "--email", opsEmail, "extra"}} {
		r := runSvc(t, dbVars(url), args...)
		require.Equal(t, 2, r.code, "%s", r)
	}
}

// TestBootstrapPromptsOnTerminal runs bootstrap under a pseudo-terminal (the
// util-linux script command): it asks twice without echo and refuses a mismatch
// or a short password, writing nothing.
func TestBootstrapPromptsOnTerminal(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("the script command (util-linux) is not installed")
	}
	url := testdb.NewURL(t)

	code, out := bootstrapOnTerminal(t, url, "password123", "password124")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "the passwords differ", out)
	code, out = bootstrapOnTerminal(t, url, "short")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "at least 8 characters", out)
	require.NotContains(t, out, "Repeat", "a short password is refused before the second prompt")
	require.Zero(t, identityCounts(t, url)["organization"])

	code, out = bootstrapOnTerminal(t, url, "password123", "password123")
	require.Equal(t, 0, code, out)
	require.NotContains(t, out, "password123", "the terminal does not echo the password")
	require.Regexp(t, regexp.MustCompile(`"api_key":"svc_[0-9A-Za-z]{49}"`), out)
	require.Equal(t, 1, identityCounts(t, url)["organization"])
}

// bootstrapOnTerminal runs bootstrap on a pseudo-terminal and types each answer
// after its prompt appears; it returns the exit code and everything shown.
func bootstrapOnTerminal(t *testing.T, url string, answers ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "script", "-qfec", "'"+svcBin+"' bootstrap --email "+opsEmail, "/dev/null")
	cmd.Env = childEnv(dbVars(url))
	cmd.Dir = t.TempDir()
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	prompts := []string{"Password (at least 8 characters): ", "Repeat the password: "}
	for i, answer := range answers {
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(out.String(), prompts[i]) {
			require.True(t, time.Now().Before(deadline), "no prompt %q; shown: %s", prompts[i], out.String())
			time.Sleep(20 * time.Millisecond)
		}
		_, err := stdin.Write([]byte(answer + "\n"))
		require.NoError(t, err)
	}
	err = <-done
	_ = stdin.Close()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("script: %v; shown: %s", err, out.String())
	}
	return cmd.ProcessState.ExitCode(), out.String()
}
