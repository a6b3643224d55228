package memory

import (
	"context"
	"encoding/json"
)

// turbopuffer's v2 paths, below the API URL.
const (
	turbopufferWrite = "/v2/namespaces/{namespace}"
	turbopufferQuery = "/v2/namespaces/{namespace}/query"
)

// turbopufferSchema declares, with every write, the attributes svc stores:
// content is BM25-searchable, metadata (a JSON string) is only returned.
// Declaring the same schema again is accepted; it creates the namespace's
// full-text index on the first write.
var turbopufferSchema = map[string]any{
	fieldContent:  map[string]any{"type": "string", "full_text_search": true},
	fieldMetadata: map[string]any{"type": "string", "filterable": false},
}

// turbopufferStore keeps a record memory's records in its turbopuffer namespace.
type turbopufferStore struct{ v vendor }

func (s *turbopufferStore) write(ctx context.Context, rec Record) error {
	a, err := s.v.postJSON(ctx, turbopufferWrite, map[string]any{
		"upsert_rows": []map[string]any{{"id": rec.ID, fieldContent: rec.Content, fieldMetadata: string(rec.Metadata)}},
		"schema":      turbopufferSchema,
	})
	if err != nil {
		return err
	}
	if !a.ok() {
		return s.v.failure("write the record", a, "")
	}
	return nil
}

// turbopufferRows is the answer to a query: its rows, with the rank_by score
// in $dist (for BM25, higher is better).
type turbopufferRows struct {
	Rows *[]struct {
		ID       json.RawMessage `json:"id"`
		Dist     *float64        `json:"$dist"`
		Content  string          `json:"content"`
		Metadata string          `json:"metadata"`
	} `json:"rows"`
}

// query sends a query and answers its rows; a namespace never written
// answers none.
func (s *turbopufferStore) query(ctx context.Context, op string, body map[string]any) ([]Record, error) {
	body["include_attributes"] = []string{fieldContent, fieldMetadata}
	a, err := s.v.postJSON(ctx, turbopufferQuery, body)
	switch {
	case err != nil:
		return nil, err
	case a.vendorNotFound():
		return []Record{}, nil
	case !a.ok():
		return nil, s.v.failure(op, a, "")
	}
	var ans turbopufferRows
	if json.Unmarshal(a.body, &ans) != nil {
		return nil, s.v.malformed(op)
	}
	if ans.Rows == nil {
		return []Record{}, nil // no rows: turbopuffer leaves the member out
	}
	out := make([]Record, 0, len(*ans.Rows))
	for _, r := range *ans.Rows {
		var id string
		if json.Unmarshal(r.ID, &id) != nil {
			continue // not a record svc wrote (ids of other types)
		}
		out = append(out, Record{ID: id, Content: r.Content, Metadata: metadataOf(r.Metadata), Score: r.Dist})
	}
	return out, nil
}

func (s *turbopufferStore) search(ctx context.Context, query string, limit int) ([]Record, error) {
	return s.query(ctx, "search", map[string]any{
		"rank_by": []any{fieldContent, "BM25", query},
		"top_k":   limit,
	})
}

func (s *turbopufferStore) read(ctx context.Context, id string) (Record, bool, error) {
	recs, err := s.query(ctx, "read the record", map[string]any{
		"filters": []any{"id", "Eq", id},
		"rank_by": []any{"id", "asc"},
		"top_k":   1,
	})
	if err != nil || len(recs) == 0 {
		return Record{}, false, err
	}
	rec := recs[0]
	rec.Score = nil
	return rec, rec.ID == id, nil
}
