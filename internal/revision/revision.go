// Package revision is the machinery shared by the revisioned resources, agents
// and skills (docs/decisions/0020-agents-and-skills.md): a
// head (name, description, labels, default revision, archived or not) plus
// immutable numbered revisions holding a configuration. A kind contributes only
// its configuration: how to validate and normalize it, and how to check the
// references it makes (Content). Both kinds live in the tables head and
// revision, told apart by kind.
//
// A configuration is stored normalized (every member present, defaults
// applied) and identified by the sha256 of its canonical JSON (keys sorted,
// no insignificant space). Publishing content whose hash equals the default
// revision's creates nothing and answers that revision.
package revision

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/resource"
)

// Kind is a revisioned resource kind; it is also the subject type of its
// audit events and the prefix of their actions ("agent.created").
type Kind string

// The revisioned kinds.
const (
	KindAgent Kind = "agent"
	KindSkill Kind = "skill"
)

// Prefix is the id prefix of the kind's heads.
func (k Kind) Prefix() string {
	if k == KindAgent {
		return "ap"
	}
	return "sk"
}

// RevisionPrefix is the id prefix of revisions of every kind.
const RevisionPrefix = "rev"

// Head is the view of an agent or skill head.
type Head struct {
	ID                   string
	Kind                 Kind
	WorkspaceID          string
	Name                 string
	Description          string
	Labels               map[string]string
	DefaultRevisionID    string
	LatestRevisionNumber int32
	ArchivedAt           *time.Time
	Version              int32
	CreatedByID          string
	UpdatedByID          string
	CreatedAt            time.Time
	UpdatedAt            time.Time
}

// Archived reports whether the head is archived.
func (h Head) Archived() bool { return h.ArchivedAt != nil }

// ETag is the head's entity tag, `"<id>:<version>"`.
func (h Head) ETag() string { return resource.ETag(h.ID, h.Version) }

// Revision is an immutable revision with its decoded configuration C.
type Revision[C any] struct {
	ID          string
	HeadID      string
	Number      int32
	Config      C
	ContentHash string
	CreatedByID string
	CreatedAt   time.Time
}

// Page is one page of heads, newest first; NextCursor is nil on the last page.
type Page = resource.Page[Head]

// RevisionPage is one page of revisions, highest number first.
type RevisionPage[C any] struct {
	Items      []Revision[C]
	NextCursor *string
}

// CreateInput is a new head with its revision 1.
type CreateInput struct {
	Name        string
	Description *string           // nil: empty
	Labels      map[string]string // nil: none
	Config      json.RawMessage
}

// PublishInput is a new revision of a head.
type PublishInput struct {
	HeadID      string
	Config      json.RawMessage
	MakeDefault *bool // nil: true
}

// ListInput filters a list of heads. Every filter is optional.
type ListInput struct {
	Labels   []string // `key:value` selectors; all must match
	Q        *string  // case-insensitive substring of name or description
	Archived *bool    // nil: archived and active heads alike
	Limit    *int
	Cursor   *string
}

// UpdateInput is a PATCH of a head: nil members keep their values. Labels,
// when set, replace the whole object.
type UpdateInput struct {
	ID                string
	IfMatch           *string
	Name              *string
	Description       *string
	Labels            map[string]string
	DefaultRevisionID *string
}

// nonEmpty is s, or nil when it is empty.
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Canonical encodes a JSON value canonically: object keys sorted, no
// insignificant space, numbers in Go's shortest float64 form, no HTML
// escaping. Two configurations are identical when these bytes are.
func Canonical(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var decoded any
	if err := json.Unmarshal(raw, &decoded); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(decoded); err != nil { // maps encode with sorted keys
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// ContentHash is the identity of canonical configuration bytes.
func ContentHash(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// headOf maps a row to the view.
func headOf(r db.Head) (Head, error) {
	labels := map[string]string{}
	if err := json.Unmarshal(r.Labels, &labels); err != nil {
		return Head{}, fmt.Errorf("%s %s: stored labels: %w", r.Kind, r.ID, err)
	}
	var archived *time.Time
	if r.ArchivedAt != nil {
		t := r.ArchivedAt.UTC()
		archived = &t
	}
	return Head{
		ID: r.ID, Kind: Kind(r.Kind), WorkspaceID: r.WorkspaceID, Name: r.Name, Description: r.Description, Labels: labels,
		DefaultRevisionID: r.DefaultRevisionID, LatestRevisionNumber: r.LatestRevisionNumber, ArchivedAt: archived,
		Version: r.Version, CreatedByID: r.CreatedByID, UpdatedByID: r.UpdatedByID,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}, nil
}

// revisionOf maps a row to the view, decoding its stored configuration.
func revisionOf[C any](r db.Revision) (Revision[C], error) {
	var cfg C
	if err := json.Unmarshal(r.Config, &cfg); err != nil {
		return Revision[C]{}, fmt.Errorf("revision %s: stored config: %w", r.ID, err)
	}
	return Revision[C]{
		ID: r.ID, HeadID: r.HeadID, Number: r.Number, Config: cfg, ContentHash: r.ContentHash,
		CreatedByID: r.CreatedByID, CreatedAt: r.CreatedAt.UTC(),
	}, nil
}

// Revision lists are ordered by number; the cursor carries the number of the
// last revision of a page.

// revisionCursor returns the cursor for the page after number.
func revisionCursor(number int32) string { return resource.Cursor(strconv.Itoa(int(number))) }

// beforeNumber decodes a revision cursor; an absent one starts above every number.
func beforeNumber(cursor *string) (int32, error) {
	if cursor == nil || *cursor == "" {
		return 1<<31 - 1, nil
	}
	raw, err := resource.AfterID(cursor)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(raw, 10, 32)
	if err != nil || n < 1 {
		return 0, apperr.InvalidField("cursor", "not a cursor from a previous page")
	}
	return int32(n), nil
}
