package dbx_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/testdb"
)

// TestWithTxTranslates: what a transaction's function returns comes out
// translated, so a service method's queries may return their errors as they
// come; a translation made inside, nearer the query, wins.
func TestWithTxTranslates(t *testing.T) {
	t.Parallel()

	type testBundle struct {
		url  string
		pool *pgxpool.Pool
	}

	setup := func(t *testing.T) *testBundle {
		t.Helper()
		url := testdb.NewURL(t)
		pool := openPool(t, url, dbx.PoolOptions{})
		_, err := pool.Exec(t.Context(), "CREATE TABLE widget (id bigint PRIMARY KEY, name text NOT NULL UNIQUE)")
		require.NoError(t, err)
		_, err = pool.Exec(t.Context(), "INSERT INTO widget (id, name) VALUES (1, 'a')")
		require.NoError(t, err)
		return &testBundle{url: url, pool: pool}
	}

	getWidget := func(ctx context.Context, tx pgx.Tx, id int64) (string, error) {
		var name string
		err := tx.QueryRow(ctx, "SELECT name FROM widget WHERE id = $1", id).Scan(&name)
		return name, err
	}

	t.Run("NoRowsIsNotFound", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		_, err := dbx.WithTxV(t.Context(), bundle.pool, func(ctx context.Context, tx pgx.Tx) (string, error) {
			return getWidget(ctx, tx, 42)
		})
		require.Equal(t, apperr.KindNotFound, apperr.KindOf(err))
		require.Equal(t, "resource not found", mustAppErr(t, err).Msg)
		require.True(t, dbx.IsNotFound(err), "the cause is kept")
	})

	t.Run("NamedInsideWins", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		_, err := dbx.WithTxV(t.Context(), bundle.pool, func(ctx context.Context, tx pgx.Tx) (string, error) {
			name, err := getWidget(ctx, tx, 42)
			return name, dbx.Translate(err, "widget")
		})
		require.Equal(t, apperr.KindNotFound, apperr.KindOf(err))
		require.Equal(t, "widget not found", mustAppErr(t, err).Msg)
	})

	t.Run("UniqueViolationIsAlreadyExists", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		err := dbx.WithTx(t.Context(), bundle.pool, func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, "INSERT INTO widget (id, name) VALUES (2, 'a')")
			return fmt.Errorf("add widget: %w", err)
		})
		require.Equal(t, apperr.KindAlreadyExists, apperr.KindOf(err))
		require.Equal(t, "23505", pgCode(err), "the cause stays available to logs")
	})

	t.Run("LostConnectionIsUnavailable", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		proxy := newCutProxy(t, bundle.url)
		pool := openPool(t, proxy.url, dbx.PoolOptions{MaxConns: 1})
		var name string
		err := dbx.WithTx(t.Context(), pool, func(ctx context.Context, tx pgx.Tx) error {
			var err error
			if name, err = getWidget(ctx, tx, 1); err != nil {
				return err
			}
			proxy.cut()
			_, err = tx.Exec(ctx, "UPDATE widget SET name = 'b' WHERE id = 1")
			return err
		})
		require.Equal(t, "a", name, "the transaction's first statement ran")
		require.Equal(t, apperr.KindUnavailable, apperr.KindOf(err), "got %v", err)
	})

	t.Run("OtherErrorsUnchanged", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		boom := errors.New("boom")
		err := dbx.WithTx(t.Context(), bundle.pool, func(ctx context.Context, tx pgx.Tx) error { return boom })
		require.Same(t, boom, err)
		require.Equal(t, apperr.KindInternal, apperr.KindOf(err))

		conflict := apperr.New(apperr.KindConflict, "the widget is busy")
		err = dbx.WithTx(t.Context(), bundle.pool, func(ctx context.Context, tx pgx.Tx) error { return conflict })
		require.Same(t, conflict, err)
	})
}

func TestTranslateBrokenConnection(t *testing.T) {
	t.Parallel()

	// The server goes away under a running statement without a word (a
	// network cut, not a shutdown message): pgx returns the socket's error.
	// The statement has an argument, as every sqlc query has, so it goes
	// over the extended protocol.
	url := testdb.NewURL(t)
	direct := openPool(t, url, dbx.PoolOptions{})
	proxy := newCutProxy(t, url)
	pool := openPool(t, proxy.url, dbx.PoolOptions{MaxConns: 1})
	errc := make(chan error, 1)
	go func() {
		var slept string
		errc <- pool.QueryRow(context.Background(), "SELECT pg_sleep($1)::text /* translate-broken */", 30).Scan(&slept)
	}()
	waitForActiveQuery(t, direct, "%translate-broken%")
	proxy.cut()

	var err error
	select {
	case err = <-errc:
	case <-time.After(10 * time.Second):
		t.Fatal("the statement did not end after its connection broke")
	}
	require.Error(t, err)
	got := dbx.Translate(err, "widget")
	require.Equal(t, apperr.KindUnavailable, apperr.KindOf(got), "got %v", err)
	require.Equal(t, "the database is unavailable", mustAppErr(t, got).Msg)
}

func TestIsNotFound(t *testing.T) {
	t.Parallel()

	for name, tc := range map[string]struct {
		err  error
		want bool
	}{
		"Nil":                   {nil, false},
		"NoRows":                {pgx.ErrNoRows, true},
		"WrappedNoRows":         {fmt.Errorf("get widget: %w", pgx.ErrNoRows), true},
		"TranslatedNoRows":      {dbx.Translate(pgx.ErrNoRows, "widget"), true},
		"NotFoundOfAnotherKind": {apperr.NotFound("widget"), false},
		"OtherError":            {io.ErrUnexpectedEOF, false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()

			require.Equal(t, tc.want, dbx.IsNotFound(tc.err))
		})
	}
}

// cutProxy forwards connections to a PostgreSQL server until cut closes
// them all and refuses new ones.
type cutProxy struct {
	url string

	ln     net.Listener
	target string
	mu     sync.Mutex
	isCut  bool
	conns  []net.Conn
}

// newCutProxy proxies the server of rawURL; its url reaches the same
// database through the proxy.
func newCutProxy(t *testing.T, rawURL string) *cutProxy {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &cutProxy{ln: ln, target: u.Host}
	u.Host = ln.Addr().String()
	p.url = u.String()
	go p.accept()
	t.Cleanup(func() { _ = ln.Close(); p.cut() })
	return p
}

func (p *cutProxy) accept() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = in.Close()
			continue
		}
		p.mu.Lock()
		if p.isCut {
			_ = in.Close()
			_ = out.Close()
		} else {
			p.conns = append(p.conns, in, out)
			go func() { _, _ = io.Copy(out, in) }()
			go func() { _, _ = io.Copy(in, out) }()
		}
		p.mu.Unlock()
	}
}

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.isCut = true
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}
