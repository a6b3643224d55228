// Package connection manages connections: a workspace's connected account at
// an app (GitHub, Gmail, ...), made through a connector provider
// (docs/decisions/0019-connections.md), and their authorization
// operations, the OAuth-style flows that give a connection its credential.
//
// A connection's credential is write-only like a provider's: it is sealed with
// the key ring bound to the connection's id and views only say whether one is
// stored. Other packages check that a connection may be newly used with
// Service.RequireUsable.
package connection

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/resource"
	"github.com/svcdev/svc/internal/secret"
)

// appPattern is an app's identifier: the vendor's slug of the app (Composio's
// toolkit slug, such as github or googlecalendar).
var appPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// maxAccount bounds an account name.
const maxAccount = 200

// Connection is the view of a connection. It carries no secret: only whether a
// credential is stored.
type Connection struct {
	ID                   string
	WorkspaceID          string
	ProviderID           string
	App                  string
	Account              *string
	Name                 string
	Config               map[string]any
	CredentialConfigured bool
	Enabled              bool
	Version              int32
	CreatedByID          string
	UpdatedByID          string
	CreatedAt            time.Time
	UpdatedAt            time.Time
}

// ETag is the connection's entity tag.
func (c Connection) ETag() string { return resource.ETag(c.ID, c.Version) }

// Page is one page of a list, newest first; NextCursor is nil on the last page.
type Page = resource.Page[Connection]

// CreateInput is a new connection.
type CreateInput struct {
	// ProviderID names a connector provider of the workspace.
	ProviderID string
	// App is the vendor's slug of the app; it never changes.
	App  string
	Name string
	// Account is the vendor's user the account is connected under; nil when not
	// known yet (an authorization then files it under the connection's id).
	Account *string
	// Config may be nil: the empty object, which the type's schema may refuse.
	Config map[string]any
	// Credential is nil when none is given.
	Credential map[string]any
	// Enabled defaults to true when nil.
	Enabled *bool
}

// UpdateInput is a PATCH of a connection: members left out keep their values.
type UpdateInput struct {
	ID         string
	IfMatch    *string
	Name       *string
	Config     map[string]any // nil: keep
	Credential secret.Change[map[string]any]
	Enabled    *bool
}

// validateApp checks an app slug.
func validateApp(app string) error {
	if !appPattern.MatchString(app) {
		return apperr.InvalidField("app", "must be 1 to 64 characters: lowercase letters a-z, digits, '_' and '-', starting with a letter or digit")
	}
	return nil
}

// validateAccount checks an account name: 1 to 200 characters of UTF-8
// without control characters.
func validateAccount(account *string) error {
	if account == nil {
		return nil
	}
	n := utf8.RuneCountInString(*account)
	switch {
	case !utf8.ValidString(*account):
		return apperr.InvalidField("account", "must be valid UTF-8")
	case n < 1 || n > maxAccount:
		return apperr.InvalidField("account", fmt.Sprintf("must have 1 to %d characters", maxAccount))
	case strings.IndexFunc(*account, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		return apperr.InvalidField("account", "must not contain control characters")
	}
	return nil
}

// connectionOf maps a row to the view.
func connectionOf(r db.Connection) (Connection, error) {
	cfg, err := decodeObject(r.Config)
	if err != nil {
		return Connection{}, fmt.Errorf("connection %s: stored config: %w", r.ID, err)
	}
	return Connection{
		ID: r.ID, WorkspaceID: r.WorkspaceID, ProviderID: r.ProviderID, App: r.App, Account: r.Account,
		Name: r.Name, Config: cfg, CredentialConfigured: r.Credential != nil, Enabled: r.Enabled,
		Version: r.Version, CreatedByID: r.CreatedByID, UpdatedByID: r.UpdatedByID,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}, nil
}

// decodeObject decodes a stored JSON object; the columns are never null.
func decodeObject(raw []byte) (map[string]any, error) {
	out := map[string]any{}
	if len(raw) == 0 {
		return out, nil
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// canonical encodes a config as JSON with sorted keys; nil is the empty object.
func canonical(cfg map[string]any) ([]byte, error) {
	if cfg == nil {
		return []byte("{}"), nil
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, apperr.InvalidField("config", "must be a JSON object")
	}
	return raw, nil
}

// configDiffers reports whether a PATCH's config differs from the stored one
// as JSON values (key order and number spelling do not count).
func configDiffers(stored []byte, cfg map[string]any) (bool, error) {
	if cfg == nil {
		return false, nil
	}
	old, err := decodeObject(stored)
	if err != nil {
		return false, err
	}
	a, _ := json.Marshal(old)
	b, err := json.Marshal(cfg)
	return err != nil || string(a) != string(b), nil
}
