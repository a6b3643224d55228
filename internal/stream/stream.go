// Package stream carries a thread's events to live readers through Redis
// streams (docs/decisions/0032-threads-runs-api-and-streams.md).
//
// PostgreSQL holds every event; Redis holds only the live tail, a capped
// stream per thread (key "<prefix>thread:<id>:events", entry id "<seq>-0",
// one field holding the event's JSON). The Publisher appends committed events
// to it, best effort. A Hub follows the tails of the threads its readers
// watch with one shared XREAD loop per process, so many readers cost one
// Redis connection, and Follow gives a reader a thread's events after a
// sequence number in order and without gaps: history from PostgreSQL, then
// the live tail, reading any gap from PostgreSQL again.
package stream

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/svcdev/svc/internal/run"
)

// eventField is the one field of a stream entry: the event's JSON.
const eventField = "e"

// Key is the Redis key of a thread's live tail under prefix.
func Key(prefix, threadID string) string {
	return prefix + "thread:" + threadID + ":events"
}

// entryID is the stream entry id of the event with sequence number seq.
func entryID(seq int64) string {
	return strconv.FormatInt(seq, 10) + "-0"
}

// seqOf parses the sequence number out of an entry id "<seq>-0".
func seqOf(id string) (int64, bool) {
	head, _, ok := strings.Cut(id, "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(head, 10, 64)
	return n, err == nil
}

// Item is an event ready to send: its sequence number, its type and its JSON
// (the contract's Event, as run.Event encodes it). The hub keeps
// items, so an event live on a thread is encoded once, not once per reader.
type Item struct {
	Seq  int64
	Type string
	JSON []byte
}

// ItemOf encodes an event.
func ItemOf(e run.Event) (Item, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return Item{}, fmt.Errorf("encode event %d of thread %s: %w", e.Seq, e.ThreadID, err)
	}
	return Item{Seq: e.Seq, Type: e.Type, JSON: b}, nil
}
