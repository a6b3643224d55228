package identity

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/resource"
)

// Service manages workspaces, memberships, API keys and the audit trail on behalf
// of an authenticated caller. Each method is one transaction.
type Service struct {
	pool *pgxpool.Pool
	q    *db.Queries
	// forgetFunc drops the authenticator's cached keys after a change that must
	// apply at once (revoke, role change, removal); nil when nothing caches.
	forgetFunc func()
}

// NewService returns a service over pool. forget, when not nil, is called after
// every committed change that alters what a key may do.
func NewService(pool *pgxpool.Pool, forget func()) *Service {
	return &Service{pool: pool, q: db.New(), forgetFunc: forget}
}

func (s *Service) forget() {
	if s.forgetFunc != nil {
		s.forgetFunc()
	}
}

// PageInput selects one page of a list: at most Limit items after Cursor.
type PageInput struct {
	Limit  *int
	Cursor *string
}

// page is a validated PageInput.
type page struct {
	limit   int
	afterID string
}

func (in PageInput) parse() (page, error) {
	after, err := resource.AfterID(in.Cursor)
	if err != nil {
		return page{}, err
	}
	return page{limit: resource.Limit(in.Limit), afterID: after}, nil
}

// Page is one page of a list, newest first; NextCursor is nil on the last page.
type Page[T any] = resource.Page[T]

// roleAtMost reports whether workspace role a is no higher than b.
func roleAtMost(a, b string) bool {
	ia, ib := slices.Index(auth.WorkspaceRoles, a), slices.Index(auth.WorkspaceRoles, b)
	return ia >= 0 && ib >= 0 && ia <= ib
}

// validateName checks a resource name: 1 to 200 characters of valid UTF-8
// without control characters (the contract's Name).
func validateName(field, name string) error {
	n := utf8.RuneCountInString(name)
	switch {
	case !utf8.ValidString(name):
		return apperr.InvalidField(field, "must be valid UTF-8")
	case n < 1 || n > 200:
		return apperr.InvalidField(field, "must have 1 to 200 characters")
	case strings.IndexFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		return apperr.InvalidField(field, "must not contain control characters")
	}
	return nil
}

func validateRole(role string) error {
	if !auth.ValidWorkspaceRole(role) {
		return apperr.InvalidField("role", fmt.Sprintf("must be one of %s", strings.Join(auth.WorkspaceRoles, ", ")))
	}
	return nil
}

// AuditEvent is one entry of a workspace's audit trail.
type AuditEvent struct {
	ID            string
	ActorID       *string // nil for operator commands
	Action        string
	SubjectType   string
	SubjectID     string
	Version       *int32
	ChangedFields []string // names only, never values
	RequestID     *string
	CreatedAt     time.Time
}
