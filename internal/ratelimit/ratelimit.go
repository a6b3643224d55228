// Package ratelimit counts requests per bucket in Redis and says whether one
// more is allowed.
//
// Each bucket is counted over a sliding window approximated from two fixed
// windows (the "sliding window counter"): the estimate is the count of the
// current window plus the previous window's count weighted by how much of it
// still overlaps the sliding window. That avoids the double burst a fixed window
// allows at its boundary, with two small Redis keys per bucket. Refused requests
// are not counted, so a client that keeps retrying is let in again as soon as
// its earlier requests age out.
//
// Asking Redis for every request would cost a round trip each (it halved the
// throughput of an authenticated API call on a small machine), so a limiter
// leases quota: each Redis call counts up to 1% of the limit (at most 100
// requests) at once and the process spends that lease locally; a refusal is
// remembered for up to a second. Limits under 100 lease one request at a time,
// so they are exact; higher ones may admit fewer requests than the limit by up
// to a lease per process, never more.
//
// Rate limits protect the service; they are not a security boundary on their
// own, and Redis holds nothing durable (while Redis is lost, rate limits stop
// and everything else works). So every Redis failure allows
// the request. After a failure the limiter stops asking Redis for a moment,
// so that an outage does not add a timeout to every request.
package ratelimit

import (
	"context"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// callTimeout bounds one Redis round trip; a slower Redis allows the request.
	callTimeout = 250 * time.Millisecond
	// pause is how long the limiter skips Redis after a failure.
	pause = time.Second
	// maxLease bounds the requests one Redis call may count at once.
	maxLease = 100
	// maxBuckets bounds the leases kept in memory.
	maxBuckets = 100_000
)

// DenialMemory bounds how long a process answers a refusal from memory,
// without asking Redis again.
const DenialMemory = time.Second

// Decision is the answer for one request.
type Decision struct {
	Allowed bool
	// RetryAfter is how long a refused client should wait; 0 when allowed.
	RetryAfter time.Duration
}

// allowed is the decision for requests that are not limited.
var allowed = Decision{Allowed: true}

// Limiter counts requests in Redis. A nil *Limiter allows everything.
type Limiter struct {
	rdb    *redis.Client
	prefix string
	log    *slog.Logger
	now    func() time.Time

	mu          sync.Mutex
	pausedUntil time.Time
	leases      map[string]*lease
}

// lease is what this process may decide about a bucket without Redis, within
// one window: requests already counted in Redis and not yet spent, or a
// refusal until deniedUntil, telling clients to retry at retryAt.
type lease struct {
	window      int64
	tokens      int
	deniedUntil time.Time
	retryAt     time.Time
}

// New returns a limiter whose keys start with keyPrefix (redis.key_prefix).
// A nil rdb gives a limiter that allows everything.
func New(rdb *redis.Client, keyPrefix string, log *slog.Logger) *Limiter {
	return &Limiter{rdb: rdb, prefix: keyPrefix, log: log, now: time.Now, leases: map[string]*lease{}}
}

// script checks and counts requests atomically. KEYS[1] is the current
// window's counter, KEYS[2] the previous one's. ARGV: the limit, the weight of
// the previous window (0 to 1), the counter's lifetime in milliseconds (two
// windows: it is the previous window during the next one) and the most
// requests to count at once. It answers {requests counted (0 when refused),
// current count, previous count}.
var script = redis.NewScript(`
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
local prev = tonumber(redis.call('GET', KEYS[2]) or '0')
local room = math.floor(tonumber(ARGV[1]) - prev * tonumber(ARGV[2]) - cur)
if room < 1 then
  return {0, cur, prev}
end
local n = math.min(room, tonumber(ARGV[4]))
cur = redis.call('INCRBY', KEYS[1], n)
if cur == n then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return {n, cur, prev}
`)

// Allow counts one request against bucket and reports whether it stays within
// limit requests per window. A limit of 0 or less disables the check. bucket
// must not hold secrets: it is part of a Redis key.
func (l *Limiter) Allow(ctx context.Context, bucket string, limit int, window time.Duration) Decision {
	if l == nil || l.rdb == nil || limit <= 0 || window <= 0 {
		return allowed
	}
	now := l.now()
	idx := now.UnixNano() / int64(window)
	if d, ok := l.local(bucket, idx, now); ok {
		return d
	}
	if l.paused(now) {
		return allowed
	}
	elapsed := time.Duration(now.UnixNano() - idx*int64(window))
	weight := 1 - float64(elapsed)/float64(window)
	// The hash tag keeps both keys of a bucket in one Redis Cluster slot.
	base := l.prefix + "ratelimit:{" + bucket + "}:"
	keys := []string{base + strconv.FormatInt(idx, 10), base + strconv.FormatInt(idx-1, 10)}
	size := min(max(limit/100, 1), maxLease)

	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	res, err := script.Run(cctx, l.rdb, keys, limit, strconv.FormatFloat(weight, 'f', 6, 64), (2 * window).Milliseconds(), size).Int64Slice()
	if err != nil || len(res) != 3 {
		if ctx.Err() == nil {
			l.fail(now, err)
		}
		return allowed
	}
	if res[0] > 0 {
		l.store(bucket, idx, func(le *lease) { le.tokens += int(res[0]) - 1 })
		return allowed
	}
	wait := retryAfter(limit, res[1], res[2], window, elapsed)
	l.store(bucket, idx, func(le *lease) {
		le.deniedUntil, le.retryAt = now.Add(min(wait, DenialMemory)), now.Add(wait)
	})
	return Decision{RetryAfter: wait}
}

// local decides from the bucket's lease in this window, if it can.
func (l *Limiter) local(bucket string, idx int64, now time.Time) (Decision, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	le := l.leases[bucket]
	switch {
	case le == nil || le.window != idx:
		return Decision{}, false
	case le.tokens > 0:
		le.tokens--
		return allowed, true
	case now.Before(le.deniedUntil):
		return Decision{RetryAfter: le.retryAt.Sub(now)}, true
	}
	return Decision{}, false
}

// store updates the bucket's lease for window idx, starting a fresh one when
// the window changed: requests counted in an earlier window are not carried over.
func (l *Limiter) store(bucket string, idx int64, update func(*lease)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	le := l.leases[bucket]
	if le == nil || le.window != idx {
		if len(l.leases) >= maxBuckets {
			for b, old := range l.leases {
				if old.window != idx {
					delete(l.leases, b)
				}
			}
			if len(l.leases) >= maxBuckets {
				clear(l.leases)
			}
		}
		le = &lease{window: idx}
		l.leases[bucket] = le
	}
	update(le)
}

// retryAfter is when one more request fits: the end of the current window if it
// is full by itself, else when the previous window's weight has shrunk enough.
func retryAfter(limit int, cur, prev int64, window, elapsed time.Duration) time.Duration {
	left := window - elapsed
	room := float64(int64(limit) - 1 - cur)
	if prev <= 0 || room < 0 {
		return left
	}
	// Allowed once prev*(left-t)/window <= room, i.e. t >= left - room*window/prev.
	t := left - time.Duration(math.Floor(room*float64(window)/float64(prev)))
	return max(t, time.Millisecond)
}

func (l *Limiter) paused(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return now.Before(l.pausedUntil)
}

// fail notes a Redis failure: requests are allowed without asking Redis for a
// moment. It logs at debug level only; the Redis monitor reports the outage.
func (l *Limiter) fail(now time.Time, err error) {
	l.mu.Lock()
	l.pausedUntil = now.Add(pause)
	l.mu.Unlock()
	msg := "unexpected answer"
	if err != nil {
		msg = err.Error()
	}
	l.log.Debug("rate limit not enforced: redis failed", "error", msg)
}
