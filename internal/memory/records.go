package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/dbx"
)

// Record is a record of a builtin memory, kept in memory_record. Every
// query of records is scoped by the workspace and the memory.
type Record struct {
	ID       string
	Content  string
	Metadata json.RawMessage
	// Score ranks search hits (higher is better); nil outside searches.
	Score *float64
	// CreatedAt is when the record was written; WriteRecord ignores it.
	CreatedAt time.Time
}

// WriteRecord stores a new record of builtin memory memoryID.
func (s *Service) WriteRecord(ctx context.Context, workspaceID, memoryID string, rec Record) error {
	err := s.q.MemoryRecordInsert(ctx, s.pool, db.MemoryRecordInsertParams{
		ID: rec.ID, WorkspaceID: workspaceID, MemoryID: memoryID, Content: rec.Content, Metadata: rec.Metadata,
	})
	if err != nil {
		return fmt.Errorf("write a record of memory %s: %w", memoryID, err)
	}
	return nil
}

// ReadRecord answers record id of builtin memory memoryID, and false when the
// memory has none.
func (s *Service) ReadRecord(ctx context.Context, workspaceID, memoryID, id string) (Record, bool, error) {
	row, err := s.q.MemoryRecordGet(ctx, s.pool, db.MemoryRecordGetParams{WorkspaceID: workspaceID, MemoryID: memoryID, ID: id})
	switch {
	case dbx.IsNotFound(err):
		return Record{}, false, nil
	case err != nil:
		return Record{}, false, fmt.Errorf("read record %s of memory %s: %w", id, memoryID, err)
	}
	return Record{ID: row.ID, Content: row.Content, Metadata: row.Metadata, CreatedAt: row.CreatedAt.UTC()}, true, nil
}

// SearchRecords answers at most limit records of builtin memory memoryID
// that match query, best first: full-text matches ranked with ts_rank; a
// query with no lexemes (only punctuation or symbols, which the 'simple'
// parser drops) is matched as a case-insensitive substring instead, newest
// first, with score 0.
func (s *Service) SearchRecords(ctx context.Context, workspaceID, memoryID, query string, limit int) ([]Record, error) {
	return s.searchRecords(ctx, workspaceID, memoryID, query, searchStart, limit)
}

// searchAfter is where a page of a search starts: after the record of
// score Score and id ID, in the search's order (best first, then newest).
type searchAfter struct {
	Score float32
	ID    string
}

// searchStart starts a search at its best record.
var searchStart = searchAfter{Score: float32(math.Inf(1)), ID: "\uffff"}

// searchRecords is SearchRecords from after.
func (s *Service) searchRecords(ctx context.Context, workspaceID, memoryID, query string, after searchAfter, limit int) ([]Record, error) {
	hasLexemes, err := s.q.MemoryRecordQueryHasLexemes(ctx, s.pool, query)
	if err != nil {
		return nil, fmt.Errorf("parse a search of memory %s: %w", memoryID, err)
	}
	if !hasLexemes {
		return s.searchSubstring(ctx, workspaceID, memoryID, query, after.ID, limit)
	}
	rows, err := s.q.MemoryRecordSearchText(ctx, s.pool, db.MemoryRecordSearchTextParams{
		Query: query, WorkspaceID: workspaceID, MemoryID: memoryID, AfterScore: after.Score, AfterID: after.ID, MaxRecords: int32(limit),
	})
	if err != nil {
		return nil, fmt.Errorf("search memory %s: %w", memoryID, err)
	}
	out := make([]Record, 0, len(rows))
	for _, r := range rows {
		score := float64(r.Score)
		out = append(out, Record{ID: r.ID, Content: r.Content, Metadata: r.Metadata, Score: &score, CreatedAt: r.CreatedAt.UTC()})
	}
	return out, nil
}

// RecallRecords answers at most limit records of builtin memory memoryID
// that match query, a tsquery ('word':* | 'other':* ...), best first: what a
// run's memories' context recalls when it begins.
func (s *Service) RecallRecords(ctx context.Context, workspaceID, memoryID, query string, limit int) ([]Record, error) {
	rows, err := s.q.MemoryRecordRecall(ctx, s.pool, db.MemoryRecordRecallParams{
		Query: query, WorkspaceID: workspaceID, MemoryID: memoryID, MaxRecords: int32(limit),
	})
	if err != nil {
		return nil, fmt.Errorf("recall from memory %s: %w", memoryID, err)
	}
	out := make([]Record, 0, len(rows))
	for _, r := range rows {
		score := float64(r.Score)
		out = append(out, Record{ID: r.ID, Content: r.Content, Metadata: r.Metadata, Score: &score, CreatedAt: r.CreatedAt.UTC()})
	}
	return out, nil
}

func (s *Service) searchSubstring(ctx context.Context, workspaceID, memoryID, query, afterID string, limit int) ([]Record, error) {
	rows, err := s.q.MemoryRecordSearchSubstring(ctx, s.pool, db.MemoryRecordSearchSubstringParams{
		WorkspaceID: workspaceID, MemoryID: memoryID, Pattern: "%" + escapeLike(query) + "%", AfterID: afterID, MaxRecords: int32(limit),
	})
	if err != nil {
		return nil, fmt.Errorf("search memory %s: %w", memoryID, err)
	}
	out := make([]Record, 0, len(rows))
	for _, r := range rows {
		score := 0.0
		out = append(out, Record{ID: r.ID, Content: r.Content, Metadata: r.Metadata, Score: &score, CreatedAt: r.CreatedAt.UTC()})
	}
	return out, nil
}

// likeEscaper escapes LIKE's wildcards and its default escape character.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// escapeLike makes s match itself in a LIKE pattern.
func escapeLike(s string) string { return likeEscaper.Replace(s) }
