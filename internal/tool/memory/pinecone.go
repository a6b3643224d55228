package memory

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
)

// Pinecone's data plane paths (API version 2025-04, sent by the provider
// type's X-Pinecone-API-Version header), below the index host.
const (
	pineconeUpsert = "/records/namespaces/{namespace}/upsert"
	pineconeSearch = "/records/namespaces/{namespace}/search"
	pineconeFetch  = "/vectors/fetch"
)

// Record fields svc stores at the vendors: the embedded (or BM25-indexed)
// text and the metadata object as a JSON string (Pinecone's metadata values
// are flat; a string keeps any object as written).
const (
	fieldContent  = "content"
	fieldMetadata = "metadata"
)

// pineconeHint explains a refused request: the index must embed `content`.
const pineconeHint = "the Pinecone index must be one with integrated embedding whose field_map maps text to the field \"content\""

// pineconeStore keeps a record memory's records in its namespace of a
// Pinecone index with integrated embedding.
type pineconeStore struct{ v vendor }

// pineconeRecord is one NDJSON line of an upsert.
type pineconeRecord struct {
	ID       string `json:"_id"`
	Content  string `json:"content"`
	Metadata string `json:"metadata"`
}

func (s *pineconeStore) write(ctx context.Context, rec Record) error {
	line, err := json.Marshal(pineconeRecord{ID: rec.ID, Content: rec.Content, Metadata: string(rec.Metadata)})
	if err != nil {
		return err
	}
	a, err := s.v.do(ctx, http.MethodPost, pineconeUpsert, nil, "application/x-ndjson", append(line, '\n'))
	if err != nil {
		return err
	}
	if !a.ok() {
		return s.v.failure("write the record", a, pineconeHint)
	}
	return nil
}

// pineconeSearchAnswer is the answer to a records search.
type pineconeSearchAnswer struct {
	Result *struct {
		Hits []struct {
			ID     string         `json:"_id"`
			Score  float64        `json:"_score"`
			Fields map[string]any `json:"fields"`
		} `json:"hits"`
	} `json:"result"`
}

func (s *pineconeStore) search(ctx context.Context, query string, limit int) ([]Record, error) {
	a, err := s.v.postJSON(ctx, pineconeSearch, map[string]any{
		"query":  map[string]any{"inputs": map[string]string{"text": query}, "top_k": limit},
		"fields": []string{fieldContent, fieldMetadata},
	})
	switch {
	case err != nil:
		return nil, err
	case a.vendorNotFound():
		return []Record{}, nil // the namespace was never written
	case !a.ok():
		return nil, s.v.failure("search", a, pineconeHint)
	}
	var ans pineconeSearchAnswer
	if json.Unmarshal(a.body, &ans) != nil || ans.Result == nil {
		return nil, s.v.malformed("search")
	}
	out := make([]Record, 0, len(ans.Result.Hits))
	for _, h := range ans.Result.Hits {
		score := h.Score
		content, _ := h.Fields[fieldContent].(string)
		meta, _ := h.Fields[fieldMetadata].(string)
		out = append(out, Record{ID: h.ID, Content: content, Metadata: metadataOf(meta), Score: &score})
	}
	return out, nil
}

// pineconeFetchAnswer is the answer to a fetch by id.
type pineconeFetchAnswer struct {
	Vectors map[string]struct {
		ID       string         `json:"id"`
		Metadata map[string]any `json:"metadata"`
	} `json:"vectors"`
}

func (s *pineconeStore) read(ctx context.Context, id string) (Record, bool, error) {
	a, err := s.v.do(ctx, http.MethodGet, pineconeFetch, url.Values{"ids": {id}, "namespace": {s.v.namespace}}, "", nil)
	switch {
	case err != nil:
		return Record{}, false, err
	case a.vendorNotFound():
		return Record{}, false, nil
	case !a.ok():
		return Record{}, false, s.v.failure("read the record", a, "")
	}
	var ans pineconeFetchAnswer
	if json.Unmarshal(a.body, &ans) != nil || ans.Vectors == nil {
		return Record{}, false, s.v.malformed("read the record")
	}
	vec, ok := ans.Vectors[id]
	if !ok {
		return Record{}, false, nil
	}
	content, _ := vec.Metadata[fieldContent].(string)
	meta, _ := vec.Metadata[fieldMetadata].(string)
	return Record{ID: id, Content: content, Metadata: metadataOf(meta)}, true, nil
}

// metadataOf is the metadata object stored as a JSON string, or {} when the
// string is not one (a record written by something else than svc).
func metadataOf(s string) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(s), &obj) != nil || obj == nil {
		return json.RawMessage("{}")
	}
	return json.RawMessage(s)
}
