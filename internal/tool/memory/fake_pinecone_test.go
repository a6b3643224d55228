package memory_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// fakePinecone is a Pinecone serverless index with integrated embedding whose
// field_map maps text to `content`, serving the data plane API 2025-04:
// upsert_records (NDJSON), search_records and fetch. Errors are Pinecone's
// JSON error objects.
type fakePinecone struct{ fakeVendor }

const (
	pineconeUnauthorized = `{"error":{"code":"UNAUTHENTICATED","message":"Invalid API Key"},"status":401}`
	pineconeNoNamespace  = `{"code":5,"message":"Namespace not found","details":[]}`
	pineconeUnavailable  = `{"error":{"code":"UNAVAILABLE","message":"Service unavailable"},"status":503}`
)

func startPinecone(t *testing.T) *fakePinecone {
	t.Helper()
	f := &fakePinecone{fakeVendor{namespaces: map[string][]fakeRecord{}}}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakePinecone) serve(w http.ResponseWriter, r *http.Request) {
	f.log(r)
	if got := r.Header.Get("Api-Key"); got != vendorKey {
		writeJSON(w, http.StatusUnauthorized, pineconeUnauthorized)
		return
	}
	if !f.begin(w, r, pineconeUnavailable) {
		return
	}
	if v := r.Header.Get("X-Pinecone-API-Version"); v != "2025-04" {
		f.problem(w, http.StatusBadRequest, `{"error":{"code":"INVALID_ARGUMENT","message":"bad version"},"status":400}`, "X-Pinecone-API-Version = %q", v)
		return
	}
	rest, isRecords := strings.CutPrefix(r.URL.Path, "/records/namespaces/")
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/vectors/fetch":
		f.fetch(w, r)
	case r.Method == http.MethodPost && isRecords && strings.HasSuffix(rest, "/upsert"):
		f.upsertRecords(w, r, strings.TrimSuffix(rest, "/upsert"))
	case r.Method == http.MethodPost && isRecords && strings.HasSuffix(rest, "/search"):
		f.search(w, r, strings.TrimSuffix(rest, "/search"))
	default:
		f.problem(w, http.StatusNotFound, `{"error":{"code":"NOT_FOUND","message":"Not found"},"status":404}`, "request %s %s", r.Method, r.URL.Path)
	}
}

// upsertRecords takes NDJSON records: `_id`, the mapped text field `content`,
// and flat metadata fields (string, number, boolean or list of strings).
func (f *fakePinecone) upsertRecords(w http.ResponseWriter, r *http.Request, ns string) {
	if ct := r.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		f.problem(w, http.StatusBadRequest, `{"error":{"code":"INVALID_ARGUMENT","message":"content type"},"status":400}`, "upsert Content-Type = %q", ct)
		return
	}
	sc := bufio.NewScanner(r.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var fields map[string]any
		if err := json.Unmarshal(line, &fields); err != nil {
			f.problem(w, http.StatusBadRequest, `{"error":{"code":"INVALID_ARGUMENT","message":"invalid json"},"status":400}`, "upsert line: %v", err)
			return
		}
		recID, _ := fields["_id"].(string)
		delete(fields, "_id")
		if _, ok := fields["content"].(string); !ok || recID == "" {
			writeJSON(w, http.StatusBadRequest, `{"error":{"code":"INVALID_ARGUMENT","message":"Missing field 'content'"},"status":400}`)
			return
		}
		for k, v := range fields {
			switch v.(type) {
			case string, float64, bool, []any:
			default:
				f.problem(w, http.StatusBadRequest, `{"error":{"code":"INVALID_ARGUMENT","message":"Metadata value must be a string, number, boolean or list of strings"},"status":400}`, "field %s is %T", k, v)
				return
			}
		}
		f.upsert(ns, fakeRecord{ID: recID, Fields: fields})
	}
	w.WriteHeader(http.StatusCreated)
}

func (f *fakePinecone) search(w http.ResponseWriter, r *http.Request, ns string) {
	var req struct {
		Query struct {
			Inputs map[string]string `json:"inputs"`
			TopK   int               `json:"top_k"`
		} `json:"query"`
		Fields []string `json:"fields"`
	}
	if err := decodeStrict(r, &req); err != nil || req.Query.TopK < 1 || req.Query.Inputs["text"] == "" {
		f.problem(w, http.StatusBadRequest, `{"error":{"code":"INVALID_ARGUMENT","message":"invalid search"},"status":400}`, "search body: %v %+v", err, req)
		return
	}
	recs, scores, ok := f.scored(ns, req.Query.Inputs["text"], req.Query.TopK)
	if !ok {
		writeJSON(w, http.StatusNotFound, pineconeNoNamespace)
		return
	}
	type hitJSON struct {
		ID     string         `json:"_id"`
		Score  float64        `json:"_score"`
		Fields map[string]any `json:"fields"`
	}
	hits := make([]hitJSON, len(recs))
	for i, rec := range recs {
		fields := map[string]any{}
		for _, name := range req.Fields {
			if v, ok := rec.Fields[name]; ok {
				fields[name] = v
			}
		}
		hits[i] = hitJSON{ID: rec.ID, Score: scores[i], Fields: fields}
	}
	b, _ := json.Marshal(map[string]any{
		"result": map[string]any{"hits": hits},
		"usage":  map[string]any{"read_units": 6, "embed_total_tokens": 8},
	})
	writeJSON(w, http.StatusOK, string(b))
}

func (f *fakePinecone) fetch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ns, ids := q.Get("namespace"), q["ids"]
	if ns == "" || len(ids) == 0 {
		f.problem(w, http.StatusBadRequest, `{"error":{"code":"INVALID_ARGUMENT","message":"ids"},"status":400}`, "fetch query %q", r.URL.RawQuery)
		return
	}
	vectors := map[string]any{}
	for _, rec := range f.Records(ns) {
		for _, want := range ids {
			if rec.ID == want {
				vectors[rec.ID] = map[string]any{"id": rec.ID, "values": []float64{0.1, 0.2, 0.3}, "metadata": rec.Fields}
			}
		}
	}
	b, _ := json.Marshal(map[string]any{"vectors": vectors, "namespace": ns, "usage": map[string]any{"readUnits": 1}})
	writeJSON(w, http.StatusOK, string(b))
}
