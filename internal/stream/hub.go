package stream

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/timestamp"
)

// Defaults of a Hub.
const (
	// DefaultBlock is how long one XREAD of the shared loop waits for news.
	DefaultBlock = 2 * time.Second
	// DefaultHeartbeat is how often a quiet reader is pinged (and re-checks
	// PostgreSQL once).
	DefaultHeartbeat = 15 * time.Second
	// DefaultRecent is how many of a thread's latest events the hub keeps for
	// its readers; one further behind reads PostgreSQL.
	DefaultRecent = 256
	// readCount is the most entries one XREAD takes per thread.
	readCount = 100
)

// Source reads a thread's stored events after seq after, oldest first, at
// most limit (run.Service.EventsAfter).
type Source func(ctx context.Context, threadID string, after int64, limit int) ([]run.Event, error)

// Options tune a Hub; zero values take the defaults.
type Options struct {
	Block     time.Duration
	Heartbeat time.Duration
	Recent    int
	// Stopping reports that the process is shutting down: followers end
	// (with ErrStopping) within about Block, so that the HTTP server's
	// graceful shutdown is not held by open streams.
	Stopping func() bool
	// Metrics count the open streams; nil counts nothing.
	Metrics *Metrics
}

// Hub follows the live tails of the threads its readers watch. One goroutine
// per process runs while anyone follows: it XREADs every watched thread's
// tail in one blocking call (one Redis connection whatever the number of
// readers or threads), keeps each thread's latest events and wakes the
// thread's readers. Readers copy what they need under the hub's lock; a slow
// reader never holds the loop up (it falls behind and reads PostgreSQL).
type Hub struct {
	rdb    *redis.Client
	prefix string
	src    Source
	log    *slog.Logger
	opts   Options
	// wakeKey is this hub's own stream: a reader of a thread the loop's
	// blocking XREAD does not cover yet adds an entry to it, so the loop
	// starts a new XREAD with the thread at once instead of after Block.
	wakeKey string

	mu      sync.Mutex
	tails   map[string]*tail // by thread id
	reading bool
	// wakeLast is the id of the last wake entry the loop read.
	wakeLast string
	// wakePending is set while a wake was sent that no snapshot has
	// followed: the next snapshot covers every tail joined meanwhile, so
	// one wake is enough for all of them.
	wakePending bool
	stop        chan struct{}
	stopped     bool
}

// tail is the hub's state of one watched thread. Its fields are guarded by
// the hub's mutex.
type tail struct {
	threadID string
	key      string
	// last is the sequence number the next XREAD reads after.
	last    int64
	readers int
	// recent holds the latest events read, ascending; never modified in
	// place (appends make a new array when trimming), so readers may keep
	// the slices they copied.
	recent []Item
	// wake is closed (and replaced) when events arrive or the tail fails.
	wake chan struct{}
	// err is set when the live tail was lost; the tail is then dropped.
	err error
}

// NewHub returns a hub over rdb (keys under prefix) that reads history from src.
func NewHub(rdb *redis.Client, prefix string, src Source, log *slog.Logger, opts Options) *Hub {
	if opts.Block <= 0 {
		opts.Block = DefaultBlock
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	if opts.Recent <= 0 {
		opts.Recent = DefaultRecent
	}
	return &Hub{rdb: rdb, prefix: prefix, src: src, log: log, opts: opts, tails: map[string]*tail{}, stop: make(chan struct{}),
		wakeKey: prefix + "stream-hub:" + id.New("hub") + ":wake", wakeLast: "0-0"}
}

// join registers a reader of threadID that has seen everything up to seq
// last, starting the shared loop when it is not running, or waking it when
// its XREAD in flight does not cover the thread.
func (h *Hub) join(ctx context.Context, threadID string, last int64) *tail {
	h.mu.Lock()
	t := h.tails[threadID]
	wake := false
	if t == nil {
		t = &tail{threadID: threadID, key: Key(h.prefix, threadID), last: last, wake: make(chan struct{})}
		h.tails[threadID] = t
		wake = h.reading && !h.wakePending
		h.wakePending = h.wakePending || wake
	}
	t.readers++
	if !h.reading {
		h.reading = true
		go h.read()
	}
	h.mu.Unlock()
	if wake {
		h.wakeLoop(ctx)
	}
	return t
}

// wakeLoop ends the loop's blocking XREAD early by adding an entry to the
// hub's wake stream, which every XREAD covers. Should it fail, the thread is
// read from the next XREAD on, at most Block later.
func (h *Hub) wakeLoop(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, h.opts.Block)
	defer cancel()
	_, err := h.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.XAdd(ctx, &redis.XAddArgs{Stream: h.wakeKey, MaxLen: 16, Values: []any{"w", "1"}})
		p.Expire(ctx, h.wakeKey, wakeTTL)
		return nil
	})
	if err != nil {
		h.log.Debug("stream: could not wake the shared loop", "error", err)
	}
}

// wakeTTL bounds how long a hub's wake stream outlives its last use.
const wakeTTL = 10 * time.Minute

// leave unregisters a reader of t; the last reader drops the tail.
func (h *Hub) leave(t *tail) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t.readers--
	if t.readers == 0 && h.tails[t.threadID] == t {
		delete(h.tails, t.threadID)
	}
}

// since returns t's events after seq last, the channel that is closed when
// more arrive, whether a gap lies between last and the first returned event
// (the caller reads it from PostgreSQL), and the tail's failure.
func (h *Hub) since(t *tail, last int64) (evs []Item, wake <-chan struct{}, gap bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, e := range t.recent {
		if e.Seq > last {
			evs = t.recent[i:len(t.recent):len(t.recent)]
			gap = e.Seq != last+1
			break
		}
	}
	return evs, t.wake, gap, t.err
}

// stopCh is closed once the process is stopping.
func (h *Hub) stopCh() <-chan struct{} { return h.stop }

// read is the shared loop: it runs while any thread is watched.
func (h *Hub) read() {
	ctx := context.Background()
	for {
		keys, byKey := h.snapshot()
		if keys == nil {
			return
		}
		res, err := h.rdb.XRead(ctx, &redis.XReadArgs{Streams: keys, Count: readCount, Block: h.opts.Block}).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			h.fail(err)
			return
		}
		h.deliver(res, byKey)
	}
}

// snapshot returns the XREAD arguments (keys, then ids) of the watched
// threads, and the tails by key; nil when none is watched any more (the loop
// then ends) or the process is stopping.
func (h *Hub) snapshot() ([]string, map[string]*tail) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.stopped && h.opts.Stopping != nil && h.opts.Stopping() {
		h.stopped = true
		close(h.stop)
	}
	h.wakePending = false
	if len(h.tails) == 0 || h.stopped {
		h.reading = false
		return nil, nil
	}
	keys := make([]string, 0, 2*len(h.tails)+2)
	ids := make([]string, 0, len(h.tails)+1)
	byKey := make(map[string]*tail, len(h.tails))
	for _, t := range h.tails {
		keys = append(keys, t.key)
		ids = append(ids, entryID(t.last))
		byKey[t.key] = t
	}
	keys, ids = append(keys, h.wakeKey), append(ids, h.wakeLast)
	return append(keys, ids...), byKey
}

// deliver adds what XREAD returned to the tails and wakes their readers.
func (h *Hub) deliver(res []redis.XStream, byKey map[string]*tail) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range res {
		if s.Stream == h.wakeKey && len(s.Messages) > 0 {
			h.wakeLast = s.Messages[len(s.Messages)-1].ID
			continue
		}
		t := byKey[s.Stream]
		if t == nil || len(s.Messages) == 0 {
			continue
		}
		fresh := make([]Item, 0, len(s.Messages))
		for _, m := range s.Messages {
			seq, ok := seqOf(m.ID)
			if !ok {
				continue
			}
			t.last = max(t.last, seq)
			raw, _ := m.Values[eventField].(string)
			var head struct {
				Seq  int64  `json:"seq"`
				Type string `json:"type"`
				At   string `json:"at"`
			}
			if err := json.Unmarshal([]byte(raw), &head); err != nil || head.Seq != seq || head.Type == "" {
				// A damaged entry: readers see a gap and read PostgreSQL.
				h.log.Debug("stream: undecodable entry", "thread_id", t.threadID, "entry", m.ID)
				continue
			}
			it := Item{Seq: seq, Type: head.Type, JSON: []byte(raw)}
			if typ := run.EventType(head.Type); typ != head.Type || !timestamp.IsFormatted(head.At) {
				// An older replica's entry: send it under the type it reads
				// as, its time in the written form.
				var e run.Event
				var err error
				if err = json.Unmarshal([]byte(raw), &e); err == nil {
					e.Type = typ
					it, err = ItemOf(e)
				}
				if err != nil {
					h.log.Debug("stream: undecodable entry", "thread_id", t.threadID, "entry", m.ID)
					continue
				}
			}
			fresh = append(fresh, it)
		}
		if len(fresh) == 0 {
			continue
		}
		t.recent = appendRecent(t.recent, fresh, h.opts.Recent)
		close(t.wake)
		t.wake = make(chan struct{})
	}
}

// appendRecent appends fresh to recent keeping at most keep events; it never
// writes into an array a reader may hold a slice of.
func appendRecent(recent, fresh []Item, keep int) []Item {
	n := len(recent) + len(fresh)
	drop := max(n-keep, 0)
	out := make([]Item, 0, min(n, keep))
	if drop < len(recent) {
		out = append(out, recent[drop:]...)
	} else {
		fresh = fresh[drop-len(recent):]
	}
	return append(out, fresh...)
}

// fail marks every watched tail lost and ends the loop; their readers end
// (after reading PostgreSQL once more). A later reader starts the loop anew.
func (h *Hub) fail(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.log.Debug("stream: live tail lost", "threads", len(h.tails), "error", err)
	for id, t := range h.tails {
		t.err = err
		close(t.wake)
		t.wake = make(chan struct{})
		delete(h.tails, id)
	}
	h.reading = false
}
