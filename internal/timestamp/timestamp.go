// Package timestamp is the one way svc writes a point in time on the wire
// (docs/decisions/0055-event-schemas-and-timestamps.md): RFC 3339 in UTC with
// exactly six fractional digits (microseconds, what PostgreSQL stores), such
// as "2026-01-02T03:04:05.120000Z". API bodies (through the generated server
// types, whose date-time members are Time), thread events (`at`, in lists and
// streams) and webhook bodies (`timestamp`) all use it; readers accept any
// RFC 3339 time.
package timestamp

import (
	"bytes"
	"fmt"
	"time"
)

// Layout is the written form, for time.Format in UTC.
const Layout = "2006-01-02T15:04:05.000000Z"

// Pattern is a regular expression that matches Layout's output and nothing
// else, for tests and documentation.
const Pattern = `^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z$`

// Format writes t in UTC with six fractional digits; digits beyond the
// microsecond are dropped (a time read from PostgreSQL has none to drop).
func Format(t time.Time) string {
	return t.UTC().Truncate(time.Microsecond).Format(Layout)
}

// IsFormatted reports whether s is in the written form (as Format writes
// it), so that a reader of text written elsewhere knows whether to rewrite it.
func IsFormatted(s string) bool {
	if len(s) != len(Layout) {
		return false
	}
	_, err := time.Parse(Layout, s)
	return err == nil
}

// Time is a time.Time that encodes to JSON and text as Format does and
// decodes from any RFC 3339 time. The generated API types use it for every
// date-time member (oapi-codegen.yaml, type-mapping).
type Time time.Time

// Of converts t.
func Of(t time.Time) Time { return Time(t) }

// Ptr converts an optional time; nil stays nil.
func Ptr(t *time.Time) *Time {
	if t == nil {
		return nil
	}
	v := Time(*t)
	return &v
}

// StdPtr converts an optional Time back; nil stays nil.
func StdPtr(t *Time) *time.Time {
	if t == nil {
		return nil
	}
	v := time.Time(*t)
	return &v
}

// Std is t as a time.Time.
func (t Time) Std() time.Time { return time.Time(t) }

// String is Format(t).
func (t Time) String() string { return Format(time.Time(t)) }

// MarshalText implements encoding.TextMarshaler.
func (t Time) MarshalText() ([]byte, error) {
	return []byte(Format(time.Time(t))), nil
}

// MarshalJSON implements json.Marshaler.
func (t Time) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, len(Layout)+2)
	b = append(b, '"')
	b = time.Time(t).UTC().Truncate(time.Microsecond).AppendFormat(b, Layout)
	return append(b, '"'), nil
}

// UnmarshalText implements encoding.TextUnmarshaler: any RFC 3339 time.
func (t *Time) UnmarshalText(b []byte) error {
	v, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		return fmt.Errorf("timestamp: %w", err)
	}
	*t = Time(v)
	return nil
}

// UnmarshalJSON implements json.Unmarshaler: a JSON string holding any
// RFC 3339 time; null leaves t unchanged.
func (t *Time) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return fmt.Errorf("timestamp: %s is not a JSON string", b)
	}
	return t.UnmarshalText(b[1 : len(b)-1])
}
