package memory

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/resource"
)

// MaxQueryChars bounds the search text of ListRecords, in characters.
const MaxQueryChars = 1000

// RecordQuery asks for a page of a builtin memory's records.
type RecordQuery struct {
	MemoryID string
	// Query, when not blank, searches the records as SearchRecords does
	// (best first); blank lists them newest first.
	Query  string
	Limit  *int
	Cursor *string
}

// RecordPage is one page of records; NextCursor is nil on the last page.
type RecordPage = resource.Page[Record]

// ListRecords answers a page of the records of builtin memory in.MemoryID of
// the caller's workspace: newest first, or the records matching in.Query,
// best first. A memory of another workspace is not found; a record memory's
// records are kept by its provider, which svc does not browse (409 conflict).
func (s *Service) ListRecords(ctx context.Context, c *auth.Caller, in RecordQuery) (RecordPage, error) {
	if err := auth.Require(c, auth.PermRead); err != nil {
		return RecordPage{}, err
	}
	query := strings.TrimSpace(in.Query)
	if err := validateQuery(query); err != nil {
		return RecordPage{}, err
	}
	n := resource.Limit(in.Limit)
	if query == "" {
		after, err := resource.AfterID(in.Cursor)
		if err != nil {
			return RecordPage{}, err
		}
		if err := s.requireBuiltin(ctx, c, in.MemoryID); err != nil {
			return RecordPage{}, err
		}
		rows, err := s.q.MemoryRecordList(ctx, s.pool, db.MemoryRecordListParams{
			WorkspaceID: c.WorkspaceID, MemoryID: in.MemoryID, AfterID: after, MaxRecords: resource.Fetch(n),
		})
		if err != nil {
			return RecordPage{}, fmt.Errorf("list the records of memory %s: %w", in.MemoryID, err)
		}
		return resource.PageOf(rows, n, func(r db.MemoryRecordListRow) Record {
			return Record{ID: r.ID, Content: r.Content, Metadata: r.Metadata, CreatedAt: r.CreatedAt.UTC()}
		}, func(r db.MemoryRecordListRow) string { return r.ID }), nil
	}
	after, err := searchCursorAfter(in.Cursor)
	if err != nil {
		return RecordPage{}, err
	}
	if err := s.requireBuiltin(ctx, c, in.MemoryID); err != nil {
		return RecordPage{}, err
	}
	recs, err := s.searchRecords(ctx, c.WorkspaceID, in.MemoryID, query, after, int(resource.Fetch(n)))
	if err != nil {
		return RecordPage{}, err
	}
	recs, more := resource.Trim(recs, n)
	page := RecordPage{Items: recs}
	if more {
		last := recs[n-1]
		next := searchCursor(searchAfter{Score: float32(*last.Score), ID: last.ID})
		page.NextCursor = &next
	}
	return page, nil
}

// GetRecord reads record recordID of builtin memory memoryID of the
// caller's workspace; like ListRecords, a record memory is 409 conflict.
func (s *Service) GetRecord(ctx context.Context, c *auth.Caller, memoryID, recordID string) (Record, error) {
	if err := auth.Require(c, auth.PermRead); err != nil {
		return Record{}, err
	}
	if err := s.requireBuiltin(ctx, c, memoryID); err != nil {
		return Record{}, err
	}
	rec, ok, err := s.ReadRecord(ctx, c.WorkspaceID, memoryID, recordID)
	switch {
	case err != nil:
		return Record{}, err
	case !ok:
		return Record{}, apperr.NotFound("memory record")
	}
	return rec, nil
}

// requireBuiltin checks that memoryID is a builtin memory of the caller's
// workspace.
func (s *Service) requireBuiltin(ctx context.Context, c *auth.Caller, memoryID string) error {
	row, err := s.q.MemoryGet(ctx, s.pool, db.MemoryGetParams{WorkspaceID: c.WorkspaceID, ID: memoryID})
	if err != nil {
		return dbx.Translate(err, "memory")
	}
	if Kind(row.Kind) != KindBuiltin {
		return apperr.New(apperr.KindConflict, fmt.Sprintf(
			"memory %s is a record memory: its records are kept by its memory provider, and svc browses only the records of builtin memories", row.ID))
	}
	return nil
}

// validateQuery checks a search text: UTF-8 of at most MaxQueryChars
// characters without control characters (400 naming q).
func validateQuery(q string) error {
	switch {
	case !utf8.ValidString(q):
		return apperr.InvalidField("q", "must be UTF-8 text")
	case utf8.RuneCountInString(q) > MaxQueryChars:
		return apperr.InvalidField("q", "must be at most 1000 characters")
	case strings.IndexFunc(q, unicode.IsControl) >= 0:
		return apperr.InvalidField("q", "must not contain control characters")
	}
	return nil
}

// searchCursor encodes where the next page of a search starts: the bits of
// the last record's score (a real, found again exactly), `_`, its id.
func searchCursor(a searchAfter) string {
	return resource.Cursor(strconv.FormatUint(uint64(math.Float32bits(a.Score)), 10) + "_" + a.ID)
}

// searchCursorAfter decodes a searchCursor; an absent one starts at the best
// record, and one that is not a search's is invalid_argument on cursor.
func searchCursorAfter(cursor *string) (searchAfter, error) {
	if cursor == nil || *cursor == "" {
		return searchStart, nil
	}
	raw, err := resource.AfterID(cursor)
	if err != nil {
		return searchAfter{}, err
	}
	bits, recID, ok := strings.Cut(raw, "_")
	score, perr := strconv.ParseUint(bits, 10, 32)
	if !ok || perr != nil || recID == "" {
		return searchAfter{}, apperr.InvalidField("cursor", "not a cursor from a previous page of this search")
	}
	return searchAfter{Score: math.Float32frombits(uint32(score)), ID: recID}, nil
}
