// Package id makes the service's public identifiers: a kind prefix and a
// lowercase ULID, e.g. ws_01jd5v6w1q3yb8j8y3tn9z2k7h. They sort by creation time,
// so "newest first" is "id descending", and they are random enough that guessing
// another workspace's ids is hopeless.
package id

import (
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
)

// Prefixes of the kinds of resources.
const (
	Organization = "org"
	Workspace    = "ws"
	User         = "usr"
	Principal    = "pri"
	APIKey       = "key"
	Invitation   = "inv"
	Session      = "ses"
	MailLink     = "mlk"
	Delivery     = "dlv"
	AuditEvent   = "aud"
	Provider     = "prv"
	Connection   = "con"
	// ConnectionOperation is a connection authorization operation.
	ConnectionOperation = "cop"

	EnvironmentTemplate = "et"
	Environment         = "env"
	Memory              = "mem"
	Subscription        = "sub"
	Asset               = "as"

	Thread  = "th"
	Input   = "in"
	Run     = "run"
	Attempt = "att"
	// Replica names a running svc process (not stored as a resource): the
	// owner of claims, leases and attempts, shown instead of its host name.
	Replica = "rep"
)

// New returns a new id of the given kind.
func New(prefix string) string {
	return prefix + "_" + strings.ToLower(ulid.Make().String())
}

// HasPrefix reports whether s looks like an id of the given kind.
func HasPrefix(s, prefix string) bool {
	return len(s) == len(prefix)+1+ulid.EncodedSize && strings.HasPrefix(s, prefix+"_")
}

// Floor returns an id of kind prefix that sorts before every id of that kind
// made at t or later (and after those made a millisecond or more before t):
// a bound for an index range over ids, which sort by creation time.
func Floor(prefix string, t time.Time) string {
	var u ulid.ULID
	if t.After(ulid.Time(0)) {
		_ = u.SetTime(ulid.Timestamp(t))
	}
	return prefix + "_" + strings.ToLower(u.String())
}
