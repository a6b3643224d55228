package pglisten_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/svcdev/svc/internal/pglisten"
	"github.com/svcdev/svc/internal/testdb"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// wait bounds every wait for something the listener does.
const wait = 30 * time.Second

type notice struct{ channel, payload string }

type testBundle struct {
	pool     *pgxpool.Pool
	listener *pglisten.Listener
	notices  chan notice
	listens  chan struct{}
	logs     *syncBuffer
	stop     func()
}

// setup starts a listener on channels "svc_a" and "svc_b" of a fresh
// database; it stops when the test ends, or at bundle.stop.
func setup(t *testing.T) *testBundle {
	t.Helper()
	b := &testBundle{pool: testdb.New(t), notices: make(chan notice, 16), listens: make(chan struct{}, 16), logs: &syncBuffer{}}
	b.listener = pglisten.New(b.pool, pglisten.Config{
		Channels:   []string{"svc_a", "svc_b"},
		NotifyFunc: func(channel, payload string) { b.notices <- notice{channel, payload} },
		ListenFunc: func() { b.listens <- struct{}{} },
		Subject:    "test",
		MinRetry:   10 * time.Millisecond,
		MaxRetry:   20 * time.Millisecond,
	}, slog.New(slog.NewTextHandler(b.logs, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.listener.Run(ctx)
	}()
	var once sync.Once
	b.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(wait):
				t.Error("the listener did not return after its context ended")
			}
		})
	}
	t.Cleanup(b.stop)
	return b
}

func (b *testBundle) waitListening(t *testing.T) {
	t.Helper()
	select {
	case <-b.listens:
	case <-time.After(wait):
		t.Fatalf("the listener did not listen; logs:\n%s", b.logs.String())
	}
}

func (b *testBundle) notify(t *testing.T, channel, payload string) {
	t.Helper()
	_, err := b.pool.Exec(t.Context(), "SELECT pg_notify($1, $2)", channel, payload)
	require.NoError(t, err)
}

func (b *testBundle) next(t *testing.T) notice {
	t.Helper()
	select {
	case n := <-b.notices:
		return n
	case <-time.After(wait):
		t.Fatal("no notification arrived")
		return notice{}
	}
}

// listenerBackends counts the database sessions that listen, other than the test's own.
func (b *testBundle) listenerBackends(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE 'LISTEN%'`).Scan(&n))
	return n
}

func TestNotificationsOnTheChannelsAreHandedOnInOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	select {
	case <-b.listener.Listening():
	case <-time.After(wait):
		t.Fatal("the listener did not report listening")
	}
	b.waitListening(t)

	b.notify(t, "svc_other", "ignored")
	b.notify(t, "svc_a", "1")
	b.notify(t, "svc_b", "2")
	require.Equal(t, notice{"svc_a", "1"}, b.next(t), "a channel not listened on is not handed on")
	require.Equal(t, notice{"svc_b", "2"}, b.next(t))
}

func TestTheListenerListensAgainAfterItsConnectionIsTerminated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.waitListening(t)

	for round := 1; round <= 2; round++ {
		// The newest listening session: the one a past round terminated may
		// still be on its way out.
		var terminated bool
		require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE 'LISTEN%'
			ORDER BY backend_start DESC LIMIT 1`).Scan(&terminated))
		require.True(t, terminated)
		b.waitListening(t)
		b.notify(t, "svc_a", "after")
		require.Equal(t, notice{"svc_a", "after"}, b.next(t))
		require.Equal(t, round, strings.Count(b.logs.String(), "test notifications lost; listening again"), "one warning per loss")
		require.Equal(t, round, strings.Count(b.logs.String(), "test notifications listened for again"))
	}
}

func TestTheListenerStopsWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.waitListening(t)
	require.Equal(t, 1, b.listenerBackends(t))

	b.stop()
	require.Eventually(t, func() bool { return b.listenerBackends(t) == 0 }, wait, 10*time.Millisecond,
		"the listener's connection is closed")
	require.NotContains(t, b.logs.String(), "notifications lost", "stopping is not a loss")
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}
