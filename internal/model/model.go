// Package model manages models: a workspace's named use of a model provider
// (docs/decisions/0014-models.md). A model has no id; its key identifies it within
// the workspace and never changes. Its api is one of the provider type's model
// APIs and its settings are validated by that API's schema.
package model

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/resource"
)

// keyPattern is the model key. Go's regexp classes are ASCII-only
// here, so look-alike letters of other scripts never match.
var keyPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{0,127}$`)

// maxModelName is the limit on the vendor model name (1 to 200 characters).
const maxModelName = 200

// Model is the view of a model.
type Model struct {
	Key         string
	WorkspaceID string
	ProviderID  string
	API         string
	Model       string
	Settings    map[string]any
	// ContextWindow is the model's context window in tokens, as set; nil
	// takes the provider type's default for the model's name, if it has
	// one (Service.Open).
	ContextWindow *int
	Enabled       bool
	Version       int32
	CreatedByID   string
	UpdatedByID   string
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// ETag is the model's entity tag, `"<key>:<version>"`.
func (m Model) ETag() string { return resource.ETag(m.Key, m.Version) }

// Page is one page of a list, newest first; NextCursor is nil on the last page.
type Page = resource.Page[Model]

// CreateInput is a new model.
type CreateInput struct {
	Key        string
	ProviderID string
	API        string
	Model      string
	// Settings may be nil: the empty object.
	Settings map[string]any
	// ContextWindow may be nil: the provider type's default, if any.
	ContextWindow *int
	// Enabled defaults to true when nil.
	Enabled *bool
}

// UpdateInput is a PATCH of a model: nil members keep their values.
type UpdateInput struct {
	Key        string
	IfMatch    *string
	ProviderID *string
	API        *string
	Model      *string
	Settings   map[string]any // nil: keep
	// SetContextWindow changes the context window to ContextWindow (nil
	// clears it); false keeps it.
	SetContextWindow bool
	ContextWindow    *int
	Enabled          *bool
}

// The bounds of a context window, in tokens.
const (
	MinContextWindow = 1024
	MaxContextWindow = 100_000_000
)

// validateContextWindow checks a context window against its bounds and
// the answer the settings reserve (max_output_tokens), which must leave
// room for the conversation.
func validateContextWindow(cw *int, settings map[string]any) error {
	if cw == nil {
		return nil
	}
	if *cw < MinContextWindow || *cw > MaxContextWindow {
		return apperr.InvalidField("context_window", fmt.Sprintf("must be %d to %d tokens", MinContextWindow, MaxContextWindow))
	}
	if out := maxOutputTokens(settings); out > 0 && out >= *cw {
		return apperr.InvalidField("context_window", fmt.Sprintf("must be more than settings.max_output_tokens (%d)", out))
	}
	return nil
}

// maxOutputTokens is the settings' max_output_tokens; 0 when unset.
func maxOutputTokens(settings map[string]any) int {
	switch v := settings["max_output_tokens"].(type) {
	case float64:
		return int(v)
	case int:
		return v
	case json.Number:
		n, _ := v.Int64()
		return int(n)
	}
	return 0
}

// ValidateKey refuses a string that is not a model key.
func ValidateKey(key string) error {
	if !keyPattern.MatchString(key) {
		return apperr.InvalidField("key", "must be 1 to 128 characters: lowercase letters a-z, digits, '-' and '.', starting with a letter or digit")
	}
	return nil
}

// validateModelName checks the vendor model name: 1 to 200 characters of
// UTF-8 without control characters.
func validateModelName(name string) error {
	n := utf8.RuneCountInString(name)
	switch {
	case !utf8.ValidString(name):
		return apperr.InvalidField("model", "must be UTF-8 text")
	case n == 0 || strings.TrimSpace(name) == "":
		return apperr.InvalidField("model", "must not be empty")
	case n > maxModelName:
		return apperr.InvalidField("model", fmt.Sprintf("must be at most %d characters", maxModelName))
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return apperr.InvalidField("model", "must not contain control characters")
	}
	return nil
}

// modelOf maps a row to the view.
func modelOf(r db.Model) (Model, error) {
	settings, err := decodeSettings(r.Settings)
	if err != nil {
		return Model{}, fmt.Errorf("model %s: stored settings: %w", r.Key, err)
	}
	return Model{
		Key: r.Key, WorkspaceID: r.WorkspaceID, ProviderID: r.ProviderID, API: r.Api, Model: r.Model,
		Settings: settings, ContextWindow: dbx.Int(r.ContextWindow), Enabled: r.Enabled, Version: r.Version, CreatedByID: r.CreatedByID,
		UpdatedByID: r.UpdatedByID, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}, nil
}

// decodeSettings decodes stored settings; the column is never null.
func decodeSettings(raw []byte) (map[string]any, error) {
	out := map[string]any{}
	if len(raw) == 0 {
		return out, nil
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// canonical encodes settings as JSON with sorted keys; nil is the empty object.
func canonical(settings map[string]any) ([]byte, error) {
	if settings == nil {
		return []byte("{}"), nil
	}
	raw, err := json.Marshal(settings)
	if err != nil {
		return nil, apperr.InvalidField("settings", "must be a JSON object")
	}
	return raw, nil
}

// The list is ordered by (created_at, key) descending, so a cursor carries
// both: the creation time in microseconds (PostgreSQL's precision) and the key
// of the last item of a page.

// firstPage sorts after every stored creation time.
var firstPage = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// encodeCursor returns the opaque cursor for the page after m.
func encodeCursor(m Model) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(m.CreatedAt.UnixMicro(), 10) + ":" + m.Key))
}

// decodeCursor returns the position a cursor names; an absent cursor starts
// before the newest model.
func decodeCursor(cursor *string) (time.Time, string, error) {
	if cursor == nil || *cursor == "" {
		return firstPage, "", nil
	}
	bad := apperr.InvalidField("cursor", "not a cursor from a previous page")
	raw, err := base64.RawURLEncoding.DecodeString(*cursor)
	if err != nil {
		return time.Time{}, "", bad
	}
	micros, key, ok := strings.Cut(string(raw), ":")
	if !ok || !keyPattern.MatchString(key) {
		return time.Time{}, "", bad
	}
	us, err := strconv.ParseInt(micros, 10, 64)
	if err != nil || us < 0 {
		return time.Time{}, "", bad
	}
	return time.UnixMicro(us).UTC(), key, nil
}
