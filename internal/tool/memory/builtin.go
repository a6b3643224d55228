package memory

import (
	"context"

	mem "github.com/svcdev/svc/internal/memory"
)

// builtinStore keeps a builtin memory's records through the memory service
// (memory_record, every query scoped by the workspace and the memory).
type builtinStore struct {
	ts          *Toolset
	workspaceID string
	memoryID    string
}

func (s *builtinStore) write(ctx context.Context, rec Record) error {
	return s.ts.memories.WriteRecord(ctx, s.workspaceID, s.memoryID, mem.Record{ID: rec.ID, Content: rec.Content, Metadata: rec.Metadata})
}

func (s *builtinStore) read(ctx context.Context, id string) (Record, bool, error) {
	r, ok, err := s.ts.memories.ReadRecord(ctx, s.workspaceID, s.memoryID, id)
	return recordOf(r), ok, err
}

func (s *builtinStore) search(ctx context.Context, query string, limit int) ([]Record, error) {
	recs, err := s.ts.memories.SearchRecords(ctx, s.workspaceID, s.memoryID, query, limit)
	return recordsOf(recs), err
}

// recall answers at most limit records matching query, a tsquery that
// recallQuery made, best first.
func (s *builtinStore) recall(ctx context.Context, query string, limit int) ([]Record, error) {
	recs, err := s.ts.memories.RecallRecords(ctx, s.workspaceID, s.memoryID, query, limit)
	return recordsOf(recs), err
}

func recordOf(r mem.Record) Record {
	return Record{ID: r.ID, Content: r.Content, Metadata: r.Metadata, Score: r.Score}
}

func recordsOf(recs []mem.Record) []Record {
	if recs == nil {
		return nil
	}
	out := make([]Record, len(recs))
	for i, r := range recs {
		out[i] = recordOf(r)
	}
	return out
}
