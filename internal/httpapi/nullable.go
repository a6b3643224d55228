package httpapi

import (
	"time"

	"github.com/oapi-codegen/nullable"

	"github.com/svcdev/svc/internal/timestamp"
)

// nullableTime maps an optional time to a member that is null when absent
// (views never omit members).
func nullableTime(t *time.Time) nullable.Nullable[timestamp.Time] {
	if t == nil {
		return nullable.NewNullNullable[timestamp.Time]()
	}
	return nullable.NewNullableWithValue(timestamp.Of(*t))
}

// nullableString maps an optional string to a member that is null when absent.
func nullableString(s *string) nullable.Nullable[string] {
	if s == nil {
		return nullable.NewNullNullable[string]()
	}
	return nullable.NewNullableWithValue(*s)
}
