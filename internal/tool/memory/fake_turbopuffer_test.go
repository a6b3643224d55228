package memory_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// fakeTurbopuffer is turbopuffer's v2 API: writes with upsert_rows and a
// schema, queries ranked by BM25 or by attribute with filters. A BM25 query
// needs the attribute declared full_text_search by an earlier write.
type fakeTurbopuffer struct {
	fakeVendor
	fts map[string]bool // namespaces whose content is BM25-searchable
}

const (
	turbopufferUnauthorized = `{"status":"error","error":"unauthorized: invalid API key"}`
	turbopufferUnavailable  = `{"status":"error","error":"service unavailable"}`
)

func startTurbopuffer(t *testing.T) *fakeTurbopuffer {
	t.Helper()
	f := &fakeTurbopuffer{fakeVendor: fakeVendor{namespaces: map[string][]fakeRecord{}}, fts: map[string]bool{}}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeTurbopuffer) serve(w http.ResponseWriter, r *http.Request) {
	f.log(r)
	if r.Header.Get("Authorization") != "Bearer "+vendorKey {
		writeJSON(w, http.StatusUnauthorized, turbopufferUnauthorized)
		return
	}
	if !f.begin(w, r, turbopufferUnavailable) {
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/v2/namespaces/")
	switch {
	case ok && r.Method == http.MethodPost && strings.HasSuffix(rest, "/query"):
		f.query(w, r, strings.TrimSuffix(rest, "/query"))
	case ok && r.Method == http.MethodPost && !strings.Contains(rest, "/"):
		f.write(w, r, rest)
	default:
		f.problem(w, http.StatusNotFound, `{"status":"error","error":"not found"}`, "request %s %s", r.Method, r.URL.Path)
	}
}

func (f *fakeTurbopuffer) write(w http.ResponseWriter, r *http.Request, ns string) {
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		f.problem(w, http.StatusBadRequest, `{"status":"error","error":"content type"}`, "write Content-Type = %q", ct)
		return
	}
	var req struct {
		UpsertRows []map[string]any `json:"upsert_rows"`
		Schema     map[string]struct {
			Type           string `json:"type"`
			FullTextSearch *bool  `json:"full_text_search"`
			Filterable     *bool  `json:"filterable"`
		} `json:"schema"`
	}
	if err := decodeStrict(r, &req); err != nil || len(req.UpsertRows) == 0 {
		f.problem(w, http.StatusBadRequest, `{"status":"error","error":"invalid write"}`, "write body: %v", err)
		return
	}
	if c, ok := req.Schema["content"]; ok && c.Type == "string" && c.FullTextSearch != nil && *c.FullTextSearch {
		f.mu.Lock()
		f.fts[ns] = true
		f.mu.Unlock()
	}
	for _, row := range req.UpsertRows {
		recID, ok := row["id"].(string)
		if !ok || len(recID) > 64 {
			f.problem(w, http.StatusBadRequest, `{"status":"error","error":"invalid id"}`, "row id %v", row["id"])
			return
		}
		if _, has := row["vector"]; has {
			f.problem(w, http.StatusBadRequest, `{"status":"error","error":"vector"}`, "a row has a vector")
			return
		}
		delete(row, "id")
		f.upsert(ns, fakeRecord{ID: recID, Fields: row})
	}
	writeJSON(w, http.StatusOK, fmt.Sprintf(`{"rows_affected":%d,"status":"OK","billing":{"billable_logical_bytes_written":512}}`, len(req.UpsertRows)))
}

func (f *fakeTurbopuffer) query(w http.ResponseWriter, r *http.Request, ns string) {
	var req struct {
		RankBy            []any    `json:"rank_by"`
		TopK              int      `json:"top_k"`
		Filters           []any    `json:"filters"`
		IncludeAttributes []string `json:"include_attributes"`
	}
	if err := decodeStrict(r, &req); err != nil || req.TopK < 1 || len(req.RankBy) < 2 {
		f.problem(w, http.StatusBadRequest, `{"status":"error","error":"invalid query"}`, "query body: %v %+v", err, req)
		return
	}
	f.mu.Lock()
	_, exists := f.namespaces[ns]
	fts := f.fts[ns]
	f.mu.Unlock()
	if !exists {
		writeJSON(w, http.StatusNotFound, fmt.Sprintf(`{"status":"error","error":"🤷 namespace '%s' was not found"}`, ns))
		return
	}
	var (
		recs   []fakeRecord
		scores []float64
	)
	switch {
	case len(req.RankBy) == 3 && req.RankBy[0] == "content" && req.RankBy[1] == "BM25":
		if !fts {
			writeJSON(w, http.StatusBadRequest, `{"status":"error","error":"attribute \"content\" is not configured for full-text search"}`)
			return
		}
		q, _ := req.RankBy[2].(string)
		recs, scores, _ = f.scored(ns, q, req.TopK)
	case len(req.RankBy) == 2 && req.RankBy[0] == "id" && req.RankBy[1] == "asc":
		if len(req.Filters) != 3 || req.Filters[0] != "id" || req.Filters[1] != "Eq" {
			f.problem(w, http.StatusBadRequest, `{"status":"error","error":"filters"}`, "filters %v", req.Filters)
			return
		}
		for _, rec := range f.Records(ns) {
			if rec.ID == req.Filters[2] {
				recs = append(recs, rec)
			}
		}
	default:
		f.problem(w, http.StatusBadRequest, `{"status":"error","error":"rank_by"}`, "rank_by %v", req.RankBy)
		return
	}
	rows := make([]map[string]any, len(recs))
	for i, rec := range recs {
		row := map[string]any{"id": rec.ID}
		if scores != nil {
			row["$dist"] = scores[i]
		}
		for _, name := range req.IncludeAttributes {
			if v, ok := rec.Fields[name]; ok {
				row[name] = v
			}
		}
		rows[i] = row
	}
	b, _ := json.Marshal(map[string]any{
		"rows":        rows,
		"billing":     map[string]any{"billable_logical_bytes_queried": 1024, "billable_logical_bytes_returned": 256},
		"performance": map[string]any{"approx_namespace_size": len(f.Records(ns)), "cache_hit_ratio": 1.0, "cache_temperature": "hot", "server_total_ms": 3, "query_execution_ms": 2, "exhaustive_search_count": 0},
	})
	writeJSON(w, http.StatusOK, string(b))
}
