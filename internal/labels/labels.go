// Package labels holds the rules for resource labels and for the label
// selectors of lists, shared by every labelled resource (agents, skills,
// environment templates).
//
// Labels are a JSON object of at most MaxLabels string values. A key matches
// ^[a-z0-9]([a-z0-9._/-]{0,62})$; a value is at most MaxValueChars printable
// characters (it may be empty). A list filters with up to MaxSelectors
// `label=key:value` query values, all of which must match.
//
// Storage and filtering: a resource keeps its labels in a jsonb column and
// has a GIN index over its labels scoped by its workspace,
//
//	CREATE INDEX x_labels_idx ON x
//	    USING gin ((labels || jsonb_object(ARRAY['', workspace_id])) jsonb_path_ops);
//
// and a list with selectors adds, with exactly the index's expression,
//
//	AND (labels || jsonb_object(ARRAY['', workspace_id])) @> @selectors::jsonb
//
// where the argument is Filter(workspaceID, selectors): one JSON object holding
// every selector and the workspace under ScopeKey. Containment is exactly "all
// must match", and it is what the GIN index answers. The workspace in the
// index keeps the index scan to the caller's workspace: with a plain
// `labels` index, a selector as common as env:prod would fetch and discard
// the matching rows of every other workspace (docs/performance.md measures
// both). ScopeKey is the empty string, which is never a label key.
//
// Errors are apperr invalid_argument naming `labels` (or `labels.<key>` for a
// bad value) for a labels object, and `label` for selectors.
package labels

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/svcdev/svc/internal/apperr"
)

// Limits.
const (
	// MaxLabels is the number of labels a resource may carry.
	MaxLabels = 32
	// MaxSelectors is the number of label selectors one list request may give.
	MaxSelectors = 8
	// MaxValueChars is the length of a label value, in characters.
	MaxValueChars = 63
)

// keyPattern is a label key. Go's regexp classes are ASCII-only here, so
// look-alike letters of other scripts never match.
var keyPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9._/-]{0,62})$`)

// Field names used in errors.
const (
	FieldLabels   = "labels"
	FieldSelector = "label"
)

// keyRule and valueRule are the reasons errors give.
const (
	keyRule   = "label keys are 1 to 63 characters: lowercase letters a-z, digits, '.', '_', '/' and '-', starting with a letter or digit"
	valueRule = "label values are at most 63 printable characters"
)

// ValidKey reports whether k is a label key.
func ValidKey(k string) bool { return keyPattern.MatchString(k) }

// ValidValue reports whether v is a label value: valid UTF-8 of at most
// MaxValueChars characters, each printable (letters, marks, numbers,
// punctuation, symbols and the ASCII space; no control, format or other
// space characters).
func ValidValue(v string) bool {
	if !utf8.ValidString(v) || utf8.RuneCountInString(v) > MaxValueChars {
		return false
	}
	return strings.IndexFunc(v, func(r rune) bool { return !unicode.IsPrint(r) }) < 0
}

// Validate checks a labels object. A nil map is the empty object. Every
// refused key and value is reported, keys by field `labels`, values by field
// `labels.<key>`; a refused key is never repeated when it is long or not text.
func Validate(l map[string]string) error {
	if len(l) > MaxLabels {
		return apperr.InvalidField(FieldLabels, fmt.Sprintf("at most %d labels are allowed; got %d", MaxLabels, len(l)))
	}
	var details []apperr.Detail
	for _, k := range slices.Sorted(maps.Keys(l)) {
		switch {
		case !ValidKey(k):
			details = append(details, apperr.Detail{Field: FieldLabels, Reason: quoteShort(k) + ": " + keyRule})
		case !ValidValue(l[k]):
			details = append(details, apperr.Detail{Field: FieldLabels + "." + k, Reason: valueRule})
		}
	}
	if len(details) > 0 {
		return apperr.InvalidArgument("labels are invalid", details...)
	}
	return nil
}

// Selector is one `key:value` selector of a list: the resource's label key
// must have exactly value.
type Selector struct {
	Key   string
	Value string
}

// String returns the selector as written in a query.
func (s Selector) String() string { return s.Key + ":" + s.Value }

// ParseSelectors parses the `label` query values of a list. Each is
// `key:value`, split at the first colon (keys have none; values may). At most
// MaxSelectors may be given, whether or not they repeat. Errors name `label`.
func ParseSelectors(raw []string) ([]Selector, error) {
	if len(raw) > MaxSelectors {
		return nil, apperr.InvalidField(FieldSelector, fmt.Sprintf("at most %d label selectors are allowed; got %d", MaxSelectors, len(raw)))
	}
	out := make([]Selector, 0, len(raw))
	var details []apperr.Detail
	for _, s := range raw {
		k, v, ok := strings.Cut(s, ":")
		switch {
		case !ok:
			details = append(details, apperr.Detail{Field: FieldSelector, Reason: quoteShort(s) + ": a selector is key:value"})
		case !ValidKey(k):
			details = append(details, apperr.Detail{Field: FieldSelector, Reason: quoteShort(s) + ": " + keyRule})
		case !ValidValue(v):
			details = append(details, apperr.Detail{Field: FieldSelector, Reason: quoteShort(s) + ": " + valueRule})
		default:
			out = append(out, Selector{Key: k, Value: v})
		}
	}
	if len(details) > 0 {
		return nil, apperr.InvalidArgument("label selectors are invalid", details...)
	}
	return out, nil
}

// ScopeKey is the key under which the index and Filter put the workspace id
// next to the labels; label keys cannot be empty, so it never collides.
const ScopeKey = ""

// Selection returns the labels a resource must carry for every selector to
// match, and false when no resource can match: two selectors ask one key for
// different values. Repeated selectors count once; no selectors is the empty
// object, which every resource carries.
func Selection(sels []Selector) (map[string]string, bool) {
	want := make(map[string]string, len(sels)+1)
	for _, s := range sels {
		if v, seen := want[s.Key]; seen && v != s.Value {
			return nil, false
		}
		want[s.Key] = s.Value
	}
	return want, true
}

// Filter returns the JSON object the scoped labels of a resource of workspace
// workspaceID must contain (`@>`) for every selector to match, and false when
// no resource can match (see Selection). With no selectors it returns nil and
// true (no filter: list without the label condition).
func Filter(workspaceID string, sels []Selector) ([]byte, bool) {
	if len(sels) == 0 {
		return nil, true
	}
	want, ok := Selection(sels)
	if !ok {
		return nil, false
	}
	want[ScopeKey] = workspaceID
	raw, err := json.Marshal(want)
	if err != nil {
		// A map of strings always encodes; invalid UTF-8 was refused by parsing.
		panic(fmt.Sprintf("labels: encode selectors: %v", err))
	}
	return raw, true
}

// Encode returns a labels object as stored (JSON with sorted keys); nil is the
// empty object.
func Encode(l map[string]string) []byte {
	if l == nil {
		return []byte("{}")
	}
	raw, err := json.Marshal(l)
	if err != nil {
		panic(fmt.Sprintf("labels: encode: %v", err))
	}
	return raw
}

// Decode reads a stored labels object; an empty column is the empty object.
func Decode(raw []byte) (map[string]string, error) {
	out := map[string]string{}
	if len(raw) == 0 {
		return out, nil
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("decode labels: %w", err)
	}
	return out, nil
}

// Equal reports whether two labels objects hold the same labels (nil is empty).
func Equal(a, b map[string]string) bool { return maps.Equal(a, b) }

// quoteShort quotes s for an error reason, cut to 80 bytes so a long input is
// not echoed whole; invalid UTF-8 is escaped by %q.
func quoteShort(s string) string {
	if len(s) > 80 {
		cut := 80
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return fmt.Sprintf("%q…", s[:cut])
	}
	return fmt.Sprintf("%q", s)
}
