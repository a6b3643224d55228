package httpapi

import (
	"time"

	"github.com/oapi-codegen/nullable"
)

// nullableTime maps an optional time to a member that is null when absent
// (views never omit members).
func nullableTime(t *time.Time) nullable.Nullable[time.Time] {
	if t == nil {
		return nullable.NewNullNullable[time.Time]()
	}
	return nullable.NewNullableWithValue(t.UTC())
}

// nullableString maps an optional string to a member that is null when absent.
func nullableString(s *string) nullable.Nullable[string] {
	if s == nil {
		return nullable.NewNullNullable[string]()
	}
	return nullable.NewNullableWithValue(*s)
}
