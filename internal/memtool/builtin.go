package memtool

import (
	"context"
	"fmt"
	"strings"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/dbx"
)

// builtinStore keeps a builtin memory's records in memory_record, every query
// scoped by the workspace and the memory.
type builtinStore struct {
	ts          *Toolset
	workspaceID string
	memoryID    string
}

func (s *builtinStore) write(ctx context.Context, rec Record) error {
	err := s.ts.q.MemoryRecordInsert(ctx, s.ts.pool, db.MemoryRecordInsertParams{
		ID: rec.ID, WorkspaceID: s.workspaceID, MemoryID: s.memoryID, Content: rec.Content, Metadata: rec.Metadata,
	})
	if err != nil {
		return fmt.Errorf("memtool: write a record of memory %s: %w", s.memoryID, err)
	}
	return nil
}

func (s *builtinStore) read(ctx context.Context, id string) (Record, bool, error) {
	row, err := s.ts.q.MemoryRecordGet(ctx, s.ts.pool, db.MemoryRecordGetParams{WorkspaceID: s.workspaceID, MemoryID: s.memoryID, ID: id})
	switch {
	case dbx.IsNotFound(err):
		return Record{}, false, nil
	case err != nil:
		return Record{}, false, fmt.Errorf("memtool: read record %s of memory %s: %w", id, s.memoryID, err)
	}
	return Record{ID: row.ID, Content: row.Content, Metadata: row.Metadata}, true, nil
}

// search ranks full-text matches with ts_rank; a query with no lexemes (only
// punctuation or symbols, which the 'simple' parser drops) is matched as a
// case-insensitive substring instead, newest first, with score 0.
func (s *builtinStore) search(ctx context.Context, query string, limit int) ([]Record, error) {
	hasLexemes, err := s.ts.q.MemoryRecordQueryHasLexemes(ctx, s.ts.pool, query)
	if err != nil {
		return nil, fmt.Errorf("memtool: parse a search of memory %s: %w", s.memoryID, err)
	}
	if !hasLexemes {
		return s.searchSubstring(ctx, query, limit)
	}
	rows, err := s.ts.q.MemoryRecordSearchText(ctx, s.ts.pool, db.MemoryRecordSearchTextParams{
		Query: query, WorkspaceID: s.workspaceID, MemoryID: s.memoryID, MaxRecords: int32(limit),
	})
	if err != nil {
		return nil, fmt.Errorf("memtool: search memory %s: %w", s.memoryID, err)
	}
	out := make([]Record, 0, len(rows))
	for _, r := range rows {
		score := float64(r.Score)
		out = append(out, Record{ID: r.ID, Content: r.Content, Metadata: r.Metadata, Score: &score})
	}
	return out, nil
}

// recall answers at most limit records matching query, a tsquery that
// recallQuery made, best first.
func (s *builtinStore) recall(ctx context.Context, query string, limit int) ([]Record, error) {
	rows, err := s.ts.q.MemoryRecordRecall(ctx, s.ts.pool, db.MemoryRecordRecallParams{
		Query: query, WorkspaceID: s.workspaceID, MemoryID: s.memoryID, MaxRecords: int32(limit),
	})
	if err != nil {
		return nil, fmt.Errorf("memtool: recall from memory %s: %w", s.memoryID, err)
	}
	out := make([]Record, 0, len(rows))
	for _, r := range rows {
		score := float64(r.Score)
		out = append(out, Record{ID: r.ID, Content: r.Content, Metadata: r.Metadata, Score: &score})
	}
	return out, nil
}

func (s *builtinStore) searchSubstring(ctx context.Context, query string, limit int) ([]Record, error) {
	rows, err := s.ts.q.MemoryRecordSearchSubstring(ctx, s.ts.pool, db.MemoryRecordSearchSubstringParams{
		WorkspaceID: s.workspaceID, MemoryID: s.memoryID, Pattern: "%" + escapeLike(query) + "%", MaxRecords: int32(limit),
	})
	if err != nil {
		return nil, fmt.Errorf("memtool: search memory %s: %w", s.memoryID, err)
	}
	out := make([]Record, 0, len(rows))
	for _, r := range rows {
		score := 0.0
		out = append(out, Record{ID: r.ID, Content: r.Content, Metadata: r.Metadata, Score: &score})
	}
	return out, nil
}

// likeEscaper escapes LIKE's wildcards and its default escape character.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// escapeLike makes s match itself in a LIKE pattern.
func escapeLike(s string) string { return likeEscaper.Replace(s) }
