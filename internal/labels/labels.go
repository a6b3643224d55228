// Package labels validates the labels of agents, skills and environment
// templates and parses the `label=key:value` selectors of their lists
// (SPEC 2.3, 4.3, 8; DESIGN "HTTP conventions"). Labels are a JSON object of
// string values; a list matches a resource when every selector is one of its
// labels, which PostgreSQL answers with `labels @> selectors` on a GIN index.
//
// Errors are apperr invalid_argument naming `labels` (or `labels.<key>`) for a
// labels object and `label` for selectors, so clients can point at the input.
package labels

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/svcdev/svc/internal/apperr"
)

// Limits of SPEC 8 and DESIGN.
const (
	// MaxLabels is the most labels one resource carries.
	MaxLabels = 32
	// MaxSelectors is the most `label` selectors one list request takes.
	MaxSelectors = 8
	// MaxValue is the longest value, in characters.
	MaxValue = 63
)

// keyPattern is a label key. Go's regexp classes are ASCII-only, so look-alike
// letters of other scripts never match.
var keyPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._/-]{0,62}$`)

// keyRule and valueRule are the reasons given for a refused key or value.
const (
	keyRule   = "a key is 1 to 63 of a-z, 0-9, '.', '_', '/', '-', starting with a letter or digit"
	valueRule = "a value is at most 63 printable characters"
)

// ValidKey reports whether k is a label key.
func ValidKey(k string) bool { return keyPattern.MatchString(k) }

// ValidValue reports whether v is a label value: at most MaxValue characters,
// each printable (letters, marks, numbers, punctuation, symbols and the ASCII
// space), in valid UTF-8. The empty value is allowed.
func ValidValue(v string) bool {
	if !utf8.ValidString(v) || utf8.RuneCountInString(v) > MaxValue {
		return false
	}
	return strings.IndexFunc(v, func(r rune) bool { return !unicode.IsPrint(r) }) < 0
}

// Validate checks a labels object. nil is the empty object. Every offending
// member is named, in key order, so one answer lists them all.
func Validate(m map[string]string) error {
	if len(m) > MaxLabels {
		return apperr.InvalidField("labels", fmt.Sprintf("at most %d labels, got %d", MaxLabels, len(m)))
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var details []apperr.Detail
	for _, k := range keys {
		switch {
		case !ValidKey(k):
			details = append(details, apperr.Detail{Field: "labels", Reason: fmt.Sprintf("key %q: %s", k, keyRule)})
		case !ValidValue(m[k]):
			details = append(details, apperr.Detail{Field: "labels." + k, Reason: valueRule})
		}
	}
	if len(details) > 0 {
		return apperr.InvalidArgument("labels are invalid", details...)
	}
	return nil
}

// ParseSelectors parses `key:value` selectors (the repeated `label` query
// parameter) into the object every match must contain. The value is what
// follows the first ':', so it may itself contain ':'. Repeating a selector is
// harmless; two different values for one key can never both match and are
// refused rather than answering an always-empty list. nil or no selectors
// gives an empty map (no filter).
func ParseSelectors(raw []string) (map[string]string, error) {
	if len(raw) > MaxSelectors {
		return nil, apperr.InvalidField("label", fmt.Sprintf("at most %d label selectors, got %d", MaxSelectors, len(raw)))
	}
	out := make(map[string]string, len(raw))
	for _, s := range raw {
		k, v, ok := strings.Cut(s, ":")
		switch {
		case !ok:
			return nil, apperr.InvalidField("label", fmt.Sprintf("selector %q: must be key:value", s))
		case !ValidKey(k):
			return nil, apperr.InvalidField("label", fmt.Sprintf("selector %q: %s", s, keyRule))
		case !ValidValue(v):
			return nil, apperr.InvalidField("label", fmt.Sprintf("selector %q: %s", s, valueRule))
		}
		if prev, dup := out[k]; dup && prev != v {
			return nil, apperr.InvalidField("label", fmt.Sprintf("key %q is selected with two values; a label has one", k))
		}
		out[k] = v
	}
	return out, nil
}
