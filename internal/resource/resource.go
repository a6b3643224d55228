// Package resource holds the conventions every versioned resource shares: ETags
// and If-Match preconditions, and keyset pagination cursors.
package resource

import (
	"encoding/base64"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/svcdev/svc/internal/apperr"
)

// ETag is the quoted entity tag of a resource version: "<id>:<version>".
func ETag(id string, version int32) string {
	return `"` + id + ":" + strconv.FormatInt(int64(version), 10) + `"`
}

// IfMatchRequired is the message of the 428 answer to a change sent without
// If-Match, whether the API's request validator or CheckIfMatch finds it.
const IfMatchRequired = "this change needs an If-Match header with the resource's ETag"

// CheckIfMatch enforces a change's precondition: a missing If-Match is 428, one
// that names another version is 412. It accepts the quoted or the bare form, a
// list of tags, and `*`. The caller compares against the row it holds locked, so
// the check and the write cannot be separated by another writer.
func CheckIfMatch(ifMatch *string, id string, version int32) error {
	if ifMatch == nil || strings.TrimSpace(*ifMatch) == "" {
		return apperr.New(apperr.KindPreconditionRequired, IfMatchRequired)
	}
	want := id + ":" + strconv.FormatInt(int64(version), 10)
	for _, tag := range strings.Split(*ifMatch, ",") {
		tag = strings.TrimSpace(tag)
		tag = strings.TrimPrefix(tag, "W/")
		if tag == "*" || strings.Trim(tag, `"`) == want {
			return nil
		}
	}
	return apperr.New(apperr.KindPreconditionFailed, "the resource changed since it was read (stale If-Match)")
}

// Page limits.
const (
	DefaultLimit = 50
	MaxLimit     = 200
)

// Limit returns the page size from an optional query value.
func Limit(limit *int) int {
	if limit == nil {
		return DefaultLimit
	}
	return min(max(*limit, 1), MaxLimit)
}

// Cursor encodes the id of the last item of a page; the next page starts after it.
func Cursor(lastID string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(lastID))
}

// AfterID decodes a cursor. An absent cursor starts at the newest item; the
// returned value then sorts after every id. A cursor svc did not make (one
// that does not decode to an id's characters: lowercase letters, digits and
// underscores) is invalid_argument on cursor, before any query sees it.
func AfterID(cursor *string) (string, error) {
	if cursor == nil || *cursor == "" {
		return "\uffff", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(*cursor)
	if err != nil || len(b) == 0 || len(b) > 100 || !idChars(b) {
		return "", apperr.InvalidField("cursor", "not a cursor from a previous page")
	}
	return string(b), nil
}

// idChars reports whether b holds only the characters of ids (and of the
// revision numbers some cursors carry).
func idChars(b []byte) bool {
	for _, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

// Fetch is the number of rows a list reads for a page of limit items: one
// more than the page, whose presence tells that a next page exists. A full
// last page then answers no cursor, instead of one to an empty page.
func Fetch(limit int) int32 {
	return int32(limit) + 1
}

// Trim cuts rows, read with Fetch(limit), to the page of limit items and
// reports whether rows follow it.
func Trim[R any](rows []R, limit int) ([]R, bool) {
	if len(rows) > limit {
		return rows[:limit], true
	}
	return rows, false
}

// NextCursor returns the cursor for the page after the one whose last item
// is lastID, or nil when nothing follows it (more is false).
func NextCursor(more bool, lastID string) *string {
	if !more {
		return nil
	}
	c := Cursor(lastID)
	return &c
}

// MaxSearchChars bounds the `q` of a list, in characters.
const MaxSearchChars = 200

// SearchPattern returns the ILIKE pattern that finds q as a case-insensitive
// substring (`%q%`, with q's own `\`, `%` and `_` escaped), or "" when q is
// absent or empty: no filter. q must be UTF-8 text of at most MaxSearchChars
// characters without control characters (400 naming `q`). Case folding is the
// database's (its LC_CTYPE; C.UTF-8 and the usual locales fold every script).
func SearchPattern(q *string) (string, error) {
	if q == nil || *q == "" {
		return "", nil
	}
	s := *q
	switch {
	case !utf8.ValidString(s):
		return "", apperr.InvalidField("q", "must be UTF-8 text")
	case utf8.RuneCountInString(s) > MaxSearchChars:
		return "", apperr.InvalidField("q", "must be at most 200 characters")
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return "", apperr.InvalidField("q", "must not contain control characters")
	}
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(s) + "%", nil
}

// Text limits of names and descriptions.
const (
	MaxNameChars        = 200
	MaxDescriptionChars = 2000
)

// ValidateName checks a name, the member field: 1 to 200 characters of UTF-8
// without control characters (the contract's Name). Any script is welcome.
func ValidateName(field, name string) error {
	n := utf8.RuneCountInString(name)
	switch {
	case !utf8.ValidString(name):
		return apperr.InvalidField(field, "must be UTF-8 text")
	case n < 1 || n > MaxNameChars:
		return apperr.InvalidField(field, "must have 1 to 200 characters")
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return apperr.InvalidField(field, "must not contain control characters")
	}
	return nil
}

// ValidateDescription checks a description: at most 2000 characters of UTF-8;
// line breaks and tabs are allowed, other control characters are not.
func ValidateDescription(field, s string) error {
	switch {
	case !utf8.ValidString(s):
		return apperr.InvalidField(field, "must be UTF-8 text")
	case utf8.RuneCountInString(s) > MaxDescriptionChars:
		return apperr.InvalidField(field, "must be at most 2000 characters")
	case strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\r' && r != '\t' }) >= 0:
		return apperr.InvalidField(field, "must not contain control characters other than line breaks and tabs")
	}
	return nil
}

// Page is one page of a list; NextCursor is nil on the last page.
type Page[T any] struct {
	Items      []T
	NextCursor *string
}

// PageOf maps rows, read with Fetch(limit), to a page of at most limit
// items: each row through conv and, when a row follows the page, the cursor
// after its last row, whose id key answers.
func PageOf[R, T any](rows []R, limit int, conv func(R) T, key func(R) string) Page[T] {
	rows, more := Trim(rows, limit)
	out := Page[T]{Items: make([]T, 0, len(rows))}
	for _, r := range rows {
		out.Items = append(out.Items, conv(r))
	}
	if len(rows) > 0 {
		out.NextCursor = NextCursor(more, key(rows[len(rows)-1]))
	}
	return out
}

// PageOfErr is PageOf for a conversion that can fail.
func PageOfErr[R, T any](rows []R, limit int, conv func(R) (T, error), key func(R) string) (Page[T], error) {
	rows, more := Trim(rows, limit)
	out := Page[T]{Items: make([]T, 0, len(rows))}
	for _, r := range rows {
		item, err := conv(r)
		if err != nil {
			return Page[T]{}, err
		}
		out.Items = append(out.Items, item)
	}
	if len(rows) > 0 {
		out.NextCursor = NextCursor(more, key(rows[len(rows)-1]))
	}
	return out, nil
}
