package stream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/stream"
	"github.com/svcdev/svc/internal/timestamp"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// redisClient connects to TEST_REDIS_URL.
func redisClient(t *testing.T) *redis.Client {
	t.Helper()
	u := os.Getenv("TEST_REDIS_URL")
	if u == "" {
		t.Fatal("TEST_REDIS_URL is not set: run `scripts/services.sh start` and `eval \"$(scripts/services.sh env)\"`")
	}
	opts, err := redis.ParseURL(u)
	require.NoError(t, err)
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// log is an in-memory event store standing in for PostgreSQL.
type log struct {
	mu  sync.Mutex
	evs map[string][]run.Event
	// reads counts Source calls.
	reads atomic.Int64
}

func newLog() *log { return &log{evs: map[string][]run.Event{}} }

// add appends n events to thread and returns them.
func (l *log) add(thread string, n int) []run.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]run.Event, n)
	for i := range out {
		seq := int64(len(l.evs[thread]) + 1)
		e := run.Event{ThreadID: thread, Seq: seq, Type: run.EventMessageDelta, At: time.Now().UTC(),
			Data: json.RawMessage(fmt.Sprintf(`{"text":"t%d"}`, seq))}
		l.evs[thread] = append(l.evs[thread], e)
		out[i] = e
	}
	return out
}

func (l *log) source(_ context.Context, thread string, after int64, limit int) ([]run.Event, error) {
	l.reads.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []run.Event
	for _, e := range l.evs[thread] {
		if e.Seq > after && len(out) < limit {
			out = append(out, e)
		}
	}
	return out, nil
}

// sink collects what a follow sends.
type sink struct {
	ch    chan stream.Item
	pings atomic.Int64
}

func newSink() *sink { return &sink{ch: make(chan stream.Item, 10000)} }

func (s *sink) Events(items []stream.Item) error {
	for _, it := range items {
		s.ch <- it
	}
	return nil
}

func (s *sink) Ping() error { s.pings.Add(1); return nil }

// expect waits for the events with seqs from..to, in order.
func (s *sink) expect(t *testing.T, from, to int64) {
	t.Helper()
	for want := from; want <= to; want++ {
		select {
		case it := <-s.ch:
			require.Equal(t, want, it.Seq, "in order, without gaps or repeats")
			require.Equal(t, run.EventMessageDelta, it.Type)
			var e map[string]any
			require.NoError(t, json.Unmarshal(it.JSON, &e))
			require.Equal(t, map[string]any{"text": fmt.Sprintf("t%d", want)}, e["data"])
			require.EqualValues(t, want, e["seq"])
			require.True(t, timestamp.IsFormatted(e["at"].(string)), "UTC, six fractional digits: %s", e["at"])
		case <-time.After(5 * time.Second):
			t.Fatalf("event %d never arrived", want)
		}
	}
}

func (s *sink) none(t *testing.T, wait time.Duration) {
	t.Helper()
	select {
	case e := <-s.ch:
		t.Fatalf("unexpected event %d", e.Seq)
	case <-time.After(wait):
	}
}

type fixture struct {
	rdb    *redis.Client
	prefix string
	log    *log
	pub    *stream.Publisher
	hub    *stream.Hub
}

func setup(t *testing.T, opts stream.Options) *fixture {
	t.Helper()
	rdb := redisClient(t)
	prefix := "svc-test-" + id.New("t")[2:] + ":"
	l := newLog()
	if opts.Block == 0 {
		opts.Block = 200 * time.Millisecond
	}
	return &fixture{rdb: rdb, prefix: prefix, log: l, pub: stream.NewPublisher(rdb, prefix, quiet),
		hub: stream.NewHub(rdb, prefix, l.source, quiet, opts)}
}

// follow runs a follow in the background until the test ends and returns
// its sink and a function that waits for its result.
func (f *fixture) follow(t *testing.T, ctx context.Context, thread string, after int64) (*sink, func() error) {
	t.Helper()
	s := newSink()
	done := make(chan error, 1)
	go func() { done <- f.hub.Follow(ctx, thread, after, s) }()
	return s, func() error {
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("the follow did not end")
			return nil
		}
	}
}

func TestPublishWritesTheTail(t *testing.T) {
	t.Parallel()
	f := setup(t, stream.Options{})
	ctx := t.Context()
	f.pub.Publish(ctx, "th_a", f.log.add("th_a", 3))
	key := stream.Key(f.prefix, "th_a")
	msgs, err := f.rdb.XRange(ctx, key, "-", "+").Result()
	require.NoError(t, err)
	require.Len(t, msgs, 3)
	require.Equal(t, "2-0", msgs[1].ID, "entry ids are the sequence numbers")
	ttl, err := f.rdb.TTL(ctx, key).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 50*time.Minute)

	// A late publish of older events is refused by Redis and dropped quietly.
	f.pub.Publish(ctx, "th_a", f.log.evs["th_a"][:1])
	n, err := f.rdb.XLen(ctx, key).Result()
	require.NoError(t, err)
	require.EqualValues(t, 3, n)
}

func TestFollowSendsHistoryThenLiveEvents(t *testing.T) {
	t.Parallel()
	f := setup(t, stream.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	f.pub.Publish(ctx, "th_a", f.log.add("th_a", 1200)) // more than one history page
	s, wait := f.follow(t, ctx, "th_a", 0)
	s.expect(t, 1, 1200)
	f.pub.Publish(ctx, "th_a", f.log.add("th_a", 2))
	s.expect(t, 1201, 1202)

	// A resumed follow starts right after its position.
	r, waitR := f.follow(t, ctx, "th_a", 1201)
	r.expect(t, 1202, 1202)
	f.pub.Publish(ctx, "th_a", f.log.add("th_a", 1))
	s.expect(t, 1203, 1203)
	r.expect(t, 1203, 1203)
	cancel()
	require.NoError(t, wait())
	require.NoError(t, waitR())
}

func TestFollowFillsGapsFromTheStore(t *testing.T) {
	t.Parallel()
	f := setup(t, stream.Options{Heartbeat: time.Hour})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	s, wait := f.follow(t, ctx, "th_a", 0)
	f.pub.Publish(ctx, "th_a", f.log.add("th_a", 2))
	s.expect(t, 1, 2)
	f.log.add("th_a", 2)                             // 3 and 4: their publish was lost
	f.pub.Publish(ctx, "th_a", f.log.add("th_a", 1)) // 5 arrives live
	s.expect(t, 3, 5)
	s.none(t, 300*time.Millisecond)
	cancel()
	require.NoError(t, wait())
}

func TestFollowRechecksTheStoreWhenQuiet(t *testing.T) {
	t.Parallel()
	f := setup(t, stream.Options{Heartbeat: 300 * time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	s, wait := f.follow(t, ctx, "th_a", 0)
	time.Sleep(100 * time.Millisecond)
	f.log.add("th_a", 1) // never published, and nothing follows it
	s.expect(t, 1, 1)
	require.Positive(t, s.pings.Load(), "quiet streams are pinged")
	cancel()
	require.NoError(t, wait())
}

func TestFollowEndsWhenRedisIsUnreachable(t *testing.T) {
	t.Parallel()
	f := setup(t, stream.Options{})
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = down.Close() })
	hub := stream.NewHub(down, f.prefix, f.log.source, quiet, stream.Options{Block: 200 * time.Millisecond})
	f.log.add("th_a", 3)
	s := newSink()
	err := hub.Follow(t.Context(), "th_a", 1, s)
	require.ErrorIs(t, err, stream.ErrLiveLost)
	s.expect(t, 2, 3)
	s.none(t, 0)
}

func TestFollowEndsWhenTheProcessStops(t *testing.T) {
	t.Parallel()
	var stopping atomic.Bool
	f := setup(t, stream.Options{Stopping: stopping.Load})
	s, wait := f.follow(t, t.Context(), "th_a", 0)
	f.pub.Publish(t.Context(), "th_a", f.log.add("th_a", 1))
	s.expect(t, 1, 1)
	stopping.Store(true)
	require.ErrorIs(t, wait(), stream.ErrStopping)
}

// Many readers of many threads share one Redis connection, each gets every
// event of its thread, and nothing is left running once they leave.
func TestManyReadersShareOneConnection(t *testing.T) {
	t.Parallel()
	f := setup(t, stream.Options{})
	hubRDB := redisClient(t)
	hub := stream.NewHub(hubRDB, f.prefix, f.log.source, quiet, stream.Options{Block: 200 * time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	const threads, perThread = 20, 10
	type reader struct {
		thread string
		s      *sink
		done   chan error
	}
	var readers []reader
	for i := range threads {
		thread := fmt.Sprintf("th_%d", i)
		for range perThread {
			r := reader{thread: thread, s: newSink(), done: make(chan error, 1)}
			go func() { r.done <- hub.Follow(ctx, r.thread, 0, r.s) }()
			readers = append(readers, r)
		}
	}
	for round := int64(1); round <= 3; round++ {
		for i := range threads {
			thread := fmt.Sprintf("th_%d", i)
			f.pub.Publish(ctx, thread, f.log.add(thread, 1))
		}
		for _, r := range readers {
			r.s.expect(t, round, round)
		}
	}
	require.LessOrEqual(t, hubRDB.PoolStats().TotalConns, uint32(2), "one shared XREAD, not one per reader")
	cancel()
	for _, r := range readers {
		require.NoError(t, <-r.done)
	}
}

func TestFollowReturnsTheSinkError(t *testing.T) {
	t.Parallel()
	f := setup(t, stream.Options{})
	f.log.add("th_a", 1)
	gone := errors.New("client gone")
	err := f.hub.Follow(t.Context(), "th_a", 0, failing{gone})
	require.ErrorIs(t, err, gone)
}

type failing struct{ err error }

func (f failing) Events([]stream.Item) error { return f.err }
func (f failing) Ping() error                { return f.err }

// A reader of a thread the shared loop's blocking XREAD does not cover yet
// gets its live events at once, not after the XREAD's Block.
func TestANewThreadIsFollowedWithoutWaitingForTheBlock(t *testing.T) {
	t.Parallel()
	f := setup(t, stream.Options{Block: 10 * time.Second})
	ctx, cancel := context.WithCancel(t.Context())
	a, waitA := f.follow(t, ctx, "th_a", 0)
	f.pub.Publish(ctx, "th_a", f.log.add("th_a", 1))
	a.expect(t, 1, 1) // the loop now blocks in an XREAD of th_a alone

	b, waitB := f.follow(t, ctx, "th_b", 0)
	time.Sleep(50 * time.Millisecond) // b joined
	start := time.Now()
	f.pub.Publish(ctx, "th_b", f.log.add("th_b", 1))
	b.expect(t, 1, 1)
	require.Less(t, time.Since(start), time.Second, "the live event waited for the XREAD's block")
	cancel()
	require.NoError(t, waitA())
	require.NoError(t, waitB())
}

func TestFollowSendsAnOldReplicasErrorEventAsRunError(t *testing.T) {
	t.Parallel()
	f := setup(t, stream.Options{Heartbeat: time.Hour})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	s, wait := f.follow(t, ctx, "th_a", 0)
	// A replica of an older build publishes the event under the type `error`.
	f.pub.Publish(ctx, "th_a", []run.Event{{ThreadID: "th_a", Seq: 1, Type: "error", At: time.Now(),
		Data: json.RawMessage(`{"code":"attempt_failed","message":"boom","retrying":true}`)}})
	select {
	case it := <-s.ch:
		require.Equal(t, int64(1), it.Seq)
		require.Equal(t, run.EventError, it.Type)
		var e map[string]any
		require.NoError(t, json.Unmarshal(it.JSON, &e))
		require.Equal(t, "run.error", e["type"])
		require.Equal(t, map[string]any{"code": "attempt_failed", "message": "boom", "retrying": true}, e["data"])
	case <-time.After(5 * time.Second):
		t.Fatal("the event never arrived")
	}
	cancel()
	require.NoError(t, wait())
}

// An entry a replica of an older build wrote, its time in another form, is
// sent with the time in the written form.
func TestFollowRewritesAnOldReplicasTime(t *testing.T) {
	t.Parallel()
	f := setup(t, stream.Options{Heartbeat: time.Hour})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	s, wait := f.follow(t, ctx, "th_a", 0)
	raw := `{"seq":1,"type":"message.delta","run_id":"run_1","at":"2026-01-02T03:04:05.12Z","data":{"text":"hi"}}`
	require.NoError(t, f.rdb.XAdd(ctx, &redis.XAddArgs{Stream: stream.Key(f.prefix, "th_a"), ID: "1-0", Values: []any{"e", raw}}).Err())
	select {
	case it := <-s.ch:
		require.JSONEq(t, `{"seq":1,"type":"message.delta","run_id":"run_1","at":"2026-01-02T03:04:05.120000Z","data":{"text":"hi"}}`, string(it.JSON))
	case <-time.After(5 * time.Second):
		t.Fatal("the event never arrived")
	}
	cancel()
	require.NoError(t, wait())
}
