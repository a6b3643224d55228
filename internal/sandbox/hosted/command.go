package hosted

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/svcdev/svc/internal/sandbox"
)

// ErrInvalidCommand is returned for an empty argv or a malformed variable.
var ErrInvalidCommand = errors.New("envhosted: invalid command")

// ErrTooLarge is returned by WriteFile for data over sandbox.MaxWriteBytes.
var ErrTooLarge = errors.New("envhosted: file too large")

// resolve joins a caller's path to the working directory root (absolute,
// clean). "" and "." name root itself; absolute paths, NUL and paths that
// leave root are refused with sandbox.ErrPath.
func resolve(root, p string) (string, error) {
	if p == "" {
		p = "."
	}
	if strings.ContainsRune(p, 0) || path.IsAbs(p) {
		return "", fmt.Errorf("%w: %q", sandbox.ErrPath, p)
	}
	if c := path.Clean(p); c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("%w: %q", sandbox.ErrPath, p)
	}
	return path.Join(root, p), nil
}

// prepared is a sandbox.Command checked and with its bounds applied.
type prepared struct {
	argv    []string
	dir     string // absolute
	env     map[string]string
	stdin   []byte
	hasIn   bool
	timeout time.Duration
	limit   int
}

// prepare checks c and applies the contract's defaults and caps.
func prepare(root string, c sandbox.Command) (prepared, error) {
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		return prepared{}, fmt.Errorf("%w: empty argv", ErrInvalidCommand)
	}
	for _, a := range c.Argv {
		if strings.ContainsRune(a, 0) {
			return prepared{}, fmt.Errorf("%w: NUL in an argument", ErrInvalidCommand)
		}
	}
	for k, v := range c.Env {
		if !validEnvName(k) || strings.ContainsRune(v, 0) {
			return prepared{}, fmt.Errorf("%w: environment variable %q", ErrInvalidCommand, k)
		}
	}
	dir, err := resolve(root, c.Dir)
	if err != nil {
		return prepared{}, err
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = sandbox.DefaultCommandTimeout
	}
	limit := c.OutputLimit
	if limit <= 0 {
		limit = sandbox.DefaultOutputLimit
	}
	return prepared{
		argv: c.Argv, dir: dir, env: c.Env, stdin: c.Stdin, hasIn: c.Stdin != nil,
		timeout: min(timeout, sandbox.MaxCommandTimeout),
		limit:   min(limit, sandbox.MaxOutputLimit),
	}, nil
}

// validEnvName accepts portable shell variable names, since most vendors
// pass variables through a shell.
func validEnvName(k string) bool {
	if k == "" {
		return false
	}
	for i, c := range k {
		if c != '_' && (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// readLimit applies ReadFile's default and cap.
func readLimit(limit int64) int64 {
	if limit <= 0 {
		limit = sandbox.DefaultReadLimit
	}
	return min(limit, sandbox.MaxReadLimit)
}

// checkWrite refuses data over sandbox.MaxWriteBytes.
func checkWrite(data []byte) error {
	if len(data) > sandbox.MaxWriteBytes {
		return fmt.Errorf("%w: %d bytes (at most %d)", ErrTooLarge, len(data), sandbox.MaxWriteBytes)
	}
	return nil
}

// clip cuts a whole output the vendor returned to limit bytes.
func clip(b []byte, limit int) ([]byte, bool) {
	if len(b) > limit {
		return b[:limit], true
	}
	return b, false
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellJoin quotes every argument for a POSIX shell.
func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

// shellEnv is the `env 'K=V' ...` prefix setting the command's variables, in
// a stable order; empty when there are none.
func shellEnv(env map[string]string) string {
	if len(env) == 0 {
		return ""
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString("env")
	for _, k := range keys {
		b.WriteString(" ")
		b.WriteString(shellQuote(k + "=" + env[k]))
	}
	b.WriteString(" ")
	return b.String()
}

// randomName is a random suffix for temporary files in an instance.
func randomName() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// decodeJSON decodes a provider config, credential, template or handle;
// unknown fields are ignored, as the schemas are validated before.
func decodeJSON(vendor, what string, raw []byte, v any) error {
	if len(raw) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return configError(vendor, "cannot decode the "+what)
	}
	return nil
}

// sortEntries orders a listing by name and caps it at sandbox.MaxListEntries.
func sortEntries(es []sandbox.Entry) []sandbox.Entry {
	slices.SortFunc(es, func(a, b sandbox.Entry) int { return strings.Compare(a.Name, b.Name) })
	if len(es) > sandbox.MaxListEntries {
		es = es[:sandbox.MaxListEntries]
	}
	return es
}
