package timestamp_test

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/timestamp"
)

// Every time is written in UTC with exactly six fractional digits, whatever
// its zone and precision; what is read back is the same instant to the
// microsecond.
func TestFormatIsOneFixedForm(t *testing.T) {
	t.Parallel()
	plus2 := time.FixedZone("plus2", 2*3600)
	pattern := regexp.MustCompile(timestamp.Pattern)
	for _, tc := range []struct {
		name string
		in   time.Time
		want string
	}{
		{"WholeSecond", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "2026-01-02T03:04:05.000000Z"},
		{"Milliseconds", time.Date(2026, 1, 2, 3, 4, 5, 120_000_000, time.UTC), "2026-01-02T03:04:05.120000Z"},
		{"Microseconds", time.Date(2026, 1, 2, 3, 4, 5, 123_456_000, time.UTC), "2026-01-02T03:04:05.123456Z"},
		{"NanosecondsAreTruncated", time.Date(2026, 1, 2, 3, 4, 5, 123_456_789, time.UTC), "2026-01-02T03:04:05.123456Z"},
		{"OtherZone", time.Date(2026, 1, 2, 5, 4, 5, 7_000, plus2), "2026-01-02T03:04:05.000007Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, timestamp.Format(tc.in))
			require.Regexp(t, pattern, tc.want)
			require.True(t, timestamp.IsFormatted(tc.want))
			b, err := json.Marshal(struct {
				At  timestamp.Time  `json:"at"`
				Opt *timestamp.Time `json:"opt"`
			}{At: timestamp.Of(tc.in), Opt: timestamp.Ptr(&tc.in)})
			require.NoError(t, err)
			require.JSONEq(t, `{"at":"`+tc.want+`","opt":"`+tc.want+`"}`, string(b))
			text, err := timestamp.Of(tc.in).MarshalText()
			require.NoError(t, err)
			require.Equal(t, tc.want, string(text))

			var back timestamp.Time
			require.NoError(t, json.Unmarshal([]byte(`"`+tc.want+`"`), &back))
			require.True(t, back.Std().Equal(tc.in.Truncate(time.Microsecond)))
		})
	}
}

// Reading takes any RFC 3339 time (clients write their own), leaves the
// value alone for null, and refuses what is not a time.
func TestReadAcceptsAnyRFC3339(t *testing.T) {
	t.Parallel()
	var v timestamp.Time
	require.NoError(t, json.Unmarshal([]byte(`"2026-01-02T05:04:05+02:00"`), &v))
	require.Equal(t, "2026-01-02T03:04:05.000000Z", v.String())
	require.NoError(t, json.Unmarshal([]byte(`null`), &v))
	require.Equal(t, "2026-01-02T03:04:05.000000Z", v.String(), "null leaves the value")
	require.Error(t, json.Unmarshal([]byte(`"yesterday"`), &v))
	require.Error(t, json.Unmarshal([]byte(`1767322800`), &v))
	require.NoError(t, v.UnmarshalText([]byte("2026-01-02T03:04:05.1Z")))
	require.Equal(t, "2026-01-02T03:04:05.100000Z", v.String())
	for _, other := range []string{"2026-01-02T03:04:05.1Z", "2026-01-02T03:04:05Z", "2026-01-02T03:04:05.123456789Z",
		"2026-01-02T03:04:05.123456+00:00", "2026-01-02 03:04:05.123456Z", ""} {
		require.False(t, timestamp.IsFormatted(other), other)
	}
	require.Nil(t, timestamp.Ptr(nil))
	require.Nil(t, timestamp.StdPtr(nil))
	p := timestamp.StdPtr(&v)
	require.True(t, p.Equal(v.Std()))
}
