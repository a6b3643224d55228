package memory_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"time"
)

// vendorKey is the key the stand-ins accept and the providers hold.
const vendorKey = "vendor-key-0123456789abcdef"

// fakeRecord is a record a stand-in holds: its id and its fields.
type fakeRecord struct {
	ID     string
	Fields map[string]any
}

// fakeVendor is what both stand-ins share: namespaces of records, the
// protocol departures seen, and queued faults.
type fakeVendor struct {
	*httptest.Server
	mu         sync.Mutex
	namespaces map[string][]fakeRecord
	problems   []string
	paths      []string
	faults     []int // statuses answered to the next requests, 0: hang
}

func (f *fakeVendor) problem(w http.ResponseWriter, status int, body string, format string, args ...any) {
	f.mu.Lock()
	f.problems = append(f.problems, fmt.Sprintf(format, args...))
	f.mu.Unlock()
	writeJSON(w, status, body)
}

// Problems are the departures from the vendor's protocol seen so far.
func (f *fakeVendor) Problems() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.problems...)
}

// Paths are "METHOD path?query" of every request served.
func (f *fakeVendor) Paths() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.paths...)
}

// Records returns the records of a namespace.
func (f *fakeVendor) Records(ns string) []fakeRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRecord(nil), f.namespaces[ns]...)
}

// FailNext makes the next request that carries the right key be answered
// with status (0: no answer until the caller gives up).
func (f *fakeVendor) FailNext(status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = append(f.faults, status)
}

// log records the request.
func (f *fakeVendor) log(r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paths = append(f.paths, r.Method+" "+r.URL.RequestURI())
}

// begin answers a queued fault; it reports whether the request goes on.
func (f *fakeVendor) begin(w http.ResponseWriter, r *http.Request, faultBody string) bool {
	f.mu.Lock()
	var fault *int
	if len(f.faults) > 0 {
		fault = &f.faults[0]
		f.faults = f.faults[1:]
	}
	f.mu.Unlock()
	switch {
	case fault == nil:
		return true
	case *fault == 0:
		// The server notices the caller hanging up only once the body is read.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	default:
		writeJSON(w, *fault, faultBody)
	}
	return false
}

func (f *fakeVendor) upsert(ns string, rec fakeRecord) {
	f.mu.Lock()
	defer f.mu.Unlock()
	recs := f.namespaces[ns]
	for i := range recs {
		if recs[i].ID == rec.ID {
			recs[i] = rec
			return
		}
	}
	f.namespaces[ns] = append(recs, rec)
}

// scored ranks a namespace's records by how many of the query's words their
// content holds (a stand-in for embeddings and for BM25), best first.
func (f *fakeVendor) scored(ns, query string, topK int) ([]fakeRecord, []float64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	recs, ok := f.namespaces[ns]
	if !ok {
		return nil, nil, false
	}
	type hit struct {
		rec   fakeRecord
		score float64
	}
	var hits []hit
	words := strings.Fields(strings.ToLower(query))
	for _, rec := range recs {
		content, _ := rec.Fields["content"].(string)
		n := 0
		for _, w := range words {
			if strings.Contains(strings.ToLower(content), w) {
				n++
			}
		}
		if n > 0 {
			hits = append(hits, hit{rec, float64(n) / float64(len(words)+1)})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].score > hits[j].score })
	if len(hits) > topK {
		hits = hits[:topK]
	}
	out, scores := make([]fakeRecord, len(hits)), make([]float64, len(hits))
	for i, h := range hits {
		out[i], scores[i] = h.rec, h.score
	}
	return out, scores, true
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = fmt.Fprint(w, body)
}

// decodeStrict decodes a JSON request body into v, refusing unknown members.
func decodeStrict(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
