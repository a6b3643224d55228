package ratelimit

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

type testBundle struct {
	rdb     *redis.Client
	limiter *Limiter
	prefix  string
	clock   *fakeClock
	logs    *syncBuffer
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string { b.mu.Lock(); defer b.mu.Unlock(); return b.buf.String() }

func redisURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("TEST_REDIS_URL")
	if u == "" {
		t.Fatal("TEST_REDIS_URL is not set: run `make test`, or `scripts/services.sh start` and `eval \"$(scripts/services.sh env)\"`")
	}
	return u
}

// minute0 is the start of a window of one minute, so tests place the clock exactly.
var minute0 = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

func setup(t *testing.T, url string) *testBundle {
	t.Helper()
	opts, err := redis.ParseURL(url)
	require.NoError(t, err)
	opts.DialTimeout = 200 * time.Millisecond
	opts.MaxRetries = -1
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	// Connect before the test: a first dial slower than DialTimeout on a loaded
	// machine would otherwise count as a Redis failure and pause the limiter.
	// (Against a server that is down this fails, as it should.)
	_ = rdb.Ping(t.Context()).Err()
	logs := &syncBuffer{}
	b := &testBundle{
		rdb:    rdb,
		prefix: "svc-test-" + strings.ToLower(ulid.Make().String()) + ":",
		clock:  &fakeClock{t: minute0},
		logs:   logs,
	}
	b.limiter = New(rdb, b.prefix, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	b.limiter.now = b.clock.now
	return b
}

func allowN(ctx context.Context, l *Limiter, bucket string, n, limit int) int {
	ok := 0
	for range n {
		if l.Allow(ctx, bucket, limit, time.Minute).Allowed {
			ok++
		}
	}
	return ok
}

func TestAllowsUpToTheLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, redisURL(t))
	ctx := t.Context()
	b.clock.set(minute0.Add(15 * time.Second))

	require.Equal(t, 5, allowN(ctx, b.limiter, "a", 5, 5))
	d := b.limiter.Allow(ctx, "a", 5, time.Minute)
	require.False(t, d.Allowed)
	require.Equal(t, 45*time.Second, d.RetryAfter, "a full current window frees up when it ends")
	require.True(t, b.limiter.Allow(ctx, "b", 5, time.Minute).Allowed, "buckets are independent")

	// Refused requests are not counted: the count stays at the limit.
	require.Equal(t, 0, allowN(ctx, b.limiter, "a", 3, 5))
	keys, err := b.rdb.Keys(ctx, b.prefix+"ratelimit:{a}:*").Result()
	require.NoError(t, err)
	require.Len(t, keys, 1)
	n, err := b.rdb.Get(ctx, keys[0]).Int()
	require.NoError(t, err)
	require.Equal(t, 5, n)
	ttl, err := b.rdb.PTTL(ctx, keys[0]).Result()
	require.NoError(t, err)
	require.InDelta(t, (2 * time.Minute).Seconds(), ttl.Seconds(), 5, "counters live two windows, then vanish")
}

func TestSlidingWindow(t *testing.T) {
	t.Parallel()
	b := setup(t, redisURL(t))
	ctx := t.Context()

	b.clock.set(minute0.Add(50 * time.Second))
	require.Equal(t, 10, allowN(ctx, b.limiter, "k", 12, 10))

	// A quarter into the next window, three quarters of the previous one still
	// count: 10 * 0.75 = 7.5, so two more fit, not a fresh ten.
	b.clock.set(minute0.Add(75 * time.Second))
	require.Equal(t, 2, allowN(ctx, b.limiter, "k", 5, 10))
	d := b.limiter.Allow(ctx, "k", 10, time.Minute)
	require.False(t, d.Allowed)
	// Allowed again once 10*(45s-t)/60s + 2 + 1 <= 10, i.e. after t = 3s.
	require.Equal(t, 3*time.Second, d.RetryAfter)
	b.clock.set(minute0.Add(78 * time.Second))
	require.True(t, b.limiter.Allow(ctx, "k", 10, time.Minute).Allowed)

	// Two windows later everything has aged out.
	b.clock.set(minute0.Add(180 * time.Second))
	require.Equal(t, 10, allowN(ctx, b.limiter, "k", 10, 10))
}

func TestDisabledAndNil(t *testing.T) {
	t.Parallel()
	b := setup(t, redisURL(t))
	require.Equal(t, 100, allowN(t.Context(), b.limiter, "off", 100, 0), "a limit of 0 is no limit")
	var l *Limiter
	require.True(t, l.Allow(t.Context(), "x", 1, time.Minute).Allowed)
	require.True(t, New(nil, "p:", slog.Default()).Allow(t.Context(), "x", 1, time.Minute).Allowed)
}

func TestRedisDownAllows(t *testing.T) {
	t.Parallel()
	// A port nobody listens on (as in the other tests of an unreachable server). A
	// port found free and closed again could be taken by a parallel test's listener
	// before the limiter dials it.
	b := setup(t, "redis://127.0.0.1:1/0")
	ctx := t.Context()
	b.clock.set(time.Now())

	start := time.Now()
	require.Equal(t, 20, allowN(ctx, b.limiter, "down", 20, 1), "without Redis every request is allowed")
	require.Less(t, time.Since(start), time.Second, "after the first failure the limiter does not wait for Redis")
	require.Contains(t, b.logs.String(), `"level":"DEBUG","msg":"rate limit not enforced: redis failed"`)
	require.Equal(t, 1, strings.Count(b.logs.String(), "rate limit not enforced"), "paused after the failure")

	// After the pause it asks Redis again.
	b.clock.set(time.Now().Add(2 * pause))
	require.True(t, b.limiter.Allow(ctx, "down", 1, time.Minute).Allowed)
	require.Equal(t, 2, strings.Count(b.logs.String(), "rate limit not enforced"))
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	w := time.Minute
	require.Equal(t, 40*time.Second, retryAfter(5, 5, 0, w, 20*time.Second), "current window full")
	require.Equal(t, 40*time.Second, retryAfter(5, 4, 100, w, 20*time.Second), "no room left besides the previous window: wait for the window's end")
	// room 4-1-1=2... limit 4, cur 1: room = 2; prev 6: t = 40s - 2*60/6 s = 20s.
	require.Equal(t, 20*time.Second, retryAfter(4, 1, 6, w, 20*time.Second))
	require.Equal(t, time.Millisecond, retryAfter(10, 0, 1, w, 59*time.Second), "never zero")
}

func TestLeases(t *testing.T) {
	t.Parallel()
	a := setup(t, redisURL(t))
	ctx := t.Context()
	a.clock.set(minute0.Add(10 * time.Second))

	require.Equal(t, 25, allowN(ctx, a.limiter, "big", 25, 1000))
	n, err := a.rdb.Get(ctx, a.prefix+"ratelimit:{big}:"+strconv.FormatInt(minute0.Add(10*time.Second).UnixNano()/int64(time.Minute), 10)).Int()
	require.NoError(t, err)
	require.Equal(t, 30, n, "three leases of 10 (1% of the limit) for 25 requests")

	// A second process sharing the bucket: together they never admit more than
	// the limit, and lose at most a lease each to unspent quota.
	b := &testBundle{rdb: a.rdb, prefix: a.prefix, clock: a.clock, logs: a.logs}
	b.limiter = New(a.rdb, a.prefix, slog.New(slog.NewJSONHandler(a.logs, nil)))
	b.limiter.now = a.clock.now
	total := 25
	for range 600 {
		total += allowN(ctx, a.limiter, "big", 1, 1000) + allowN(ctx, b.limiter, "big", 1, 1000)
	}
	require.LessOrEqual(t, total, 1000)
	require.GreaterOrEqual(t, total, 1000-2*9)

	// A new window starts from what Redis says, not from leftovers.
	a.clock.set(minute0.Add(130 * time.Second))
	require.Equal(t, 1000, allowN(ctx, a.limiter, "big", 1010, 1000), "one process alone gets the whole limit")
	require.Equal(t, 5, allowN(ctx, a.limiter, "small", 7, 5), "limits under 100 are exact")
}
