// Package testdb gives each test its own PostgreSQL database, cloned from a
// template migrated once per migration set (CREATE DATABASE ... TEMPLATE takes tens
// of milliseconds), so tests are isolated, parallel-safe and see real commits,
// locks and SKIP LOCKED behaviour. Import it only from tests.
//
// TEST_DATABASE_URL names a server and a database to administer from (for example
// postgres://postgres@127.0.0.1:55432/postgres?sslmode=disable; `make test` sets it).
// Tests that need a database fail when it is unset: they never skip silently.
package testdb

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/internal/dbx"
	schema "github.com/svcdev/svc/sql"
)

// EnvURL is the variable naming the test server.
const EnvURL = "TEST_DATABASE_URL"

var (
	templateOnce sync.Once
	templateName string
	templateErr  error
)

// AdminURL returns TEST_DATABASE_URL, failing the test when it is unset.
func AdminURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvURL)
	if u == "" {
		t.Fatalf("%s is not set: this test needs PostgreSQL. Run `make test`, or start one with `scripts/services.sh start` and `eval \"$(scripts/services.sh env)\"`", EnvURL)
	}
	return u
}

// New returns a pool on a fresh, migrated database that is dropped when the test ends.
func New(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), NewURL(t))
	if err != nil {
		t.Fatalf("open test database: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// NewURL creates a fresh, migrated database and returns its URL.
func NewURL(t testing.TB) string {
	t.Helper()
	admin := AdminURL(t)
	templateOnce.Do(func() { templateName, templateErr = ensureTemplate(admin) })
	if templateErr != nil {
		t.Fatalf("prepare template database: %v", templateErr)
	}
	return create(t, admin, templateName)
}

// Empty creates a fresh database with no schema at all and returns its URL.
func Empty(t testing.TB) string {
	t.Helper()
	return create(t, AdminURL(t), "template0")
}

func create(t testing.TB, admin, template string) string {
	t.Helper()
	name := "svc_test_" + randomSuffix()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := exec(ctx, admin, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s", pgx.Identifier{name}.Sanitize(), pgx.Identifier{template}.Sanitize())); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := exec(ctx, admin, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", pgx.Identifier{name}.Sanitize())); err != nil {
			t.Logf("drop test database %s: %v", name, err)
		}
	})
	return WithDatabase(t, admin, name)
}

// WithDatabase returns u with its database name replaced. (pgx's ParseConfig keeps
// the original string in ConnString, so the URL is rebuilt with net/url.)
func WithDatabase(t testing.TB, u, database string) string {
	t.Helper()
	out, err := withDatabase(u, database)
	if err != nil {
		t.Fatalf("%s: %v", EnvURL, err)
	}
	return out
}

func withDatabase(u, database string) (string, error) {
	parsed, err := url.Parse(u)
	if err != nil || (parsed.Scheme != "postgres" && parsed.Scheme != "postgresql") {
		return "", fmt.Errorf("must be a postgres:// URL")
	}
	parsed.Path = "/" + database
	return parsed.String(), nil
}

// ensureTemplate migrates the template for this migration set once. Test binaries of
// different packages run at the same time, so creation is serialized with an
// advisory lock, and a template is built under a temporary name and renamed only
// when complete: a crash never leaves a half-migrated template behind.
func ensureTemplate(admin string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sum, err := migrationsHash()
	if err != nil {
		return "", err
	}
	name := "svc_tmpl_" + sum
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", fmt.Errorf("connect to %s: %w", EnvURL, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	lockID := int64(h.Sum64())
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", lockID); err != nil {
		return "", err
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", lockID) }()

	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	building := name + "_build"
	if _, err := conn.Exec(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", pgx.Identifier{building}.Sanitize())); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE template0", pgx.Identifier{building}.Sanitize())); err != nil {
		return "", err
	}
	buildURL, err := withDatabase(admin, building)
	if err != nil {
		return "", err
	}
	pool, err := pgxpool.New(ctx, buildURL)
	if err != nil {
		return "", err
	}
	_, err = dbx.Migrate(ctx, pool, time.Minute, slog.New(slog.NewTextHandler(io.Discard, nil)))
	pool.Close()
	if err != nil {
		return "", fmt.Errorf("migrate template: %w", err)
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s RENAME TO %s", pgx.Identifier{building}.Sanitize(), pgx.Identifier{name}.Sanitize())); err != nil {
		return "", err
	}
	return name, nil
}

// migrationsHash names the template after the migration files' content, so a
// changed migration gets a new template instead of a stale one.
func migrationsHash() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(schema.Migrations, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(schema.Migrations, p)
		if err != nil {
			return err
		}
		_, _ = io.WriteString(h, p+"\x00")
		_, _ = h.Write(b)
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

func exec(ctx context.Context, admin, sql string) error {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", EnvURL, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, sql)
	return err
}

func randomSuffix() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return strings.ToLower(hex.EncodeToString(b))
}
