// Package secret holds what every resource with write-only secrets shares
// (providers, connections): the PATCH tri-state of a secret member, and
// sealing JSON values with the key ring bound to the row that stores them.
//
// A secret is encoded as JSON and sealed with the associated data the caller
// names, normally the id of the row, so that a ciphertext copied to another row
// does not open. Nothing here logs or returns a secret's value in an error.
package secret

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/svcdev/svc/internal/keyring"
)

// ErrUnreadable wraps the key ring's error when a stored secret cannot be
// opened: its key left the ring, or the ciphertext was altered or moved from
// another row.
var ErrUnreadable = errors.New("stored secret cannot be opened")

// Change is a PATCH member that can be left out, set, or set to null:
// Present false keeps the stored value, Present with a nil Value removes it,
// Present with a Value replaces it.
type Change[T any] struct {
	Present bool
	Value   *T
}

// Set returns a change that replaces the stored value with v.
func Set[T any](v T) Change[T] { return Change[T]{Present: true, Value: &v} }

// Remove returns a change that removes the stored value.
func Remove[T any]() Change[T] { return Change[T]{Present: true} }

// Seal encodes v as JSON and seals it bound to aad. A nil value (one that
// encodes to JSON null) seals to nil: nothing is stored.
func Seal(ring *keyring.Ring, aad string, v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode secret: %w", err)
	}
	if bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	return ring.Seal(raw, []byte(aad))
}

// Open opens a value sealed bound to aad into out; a nil sealed value leaves
// out untouched. A value that does not open fails with an error wrapping
// ErrUnreadable and the key ring's reason; it never yields garbage.
func Open(ring *keyring.Ring, aad string, sealed []byte, out any) error {
	if sealed == nil {
		return nil
	}
	raw, err := ring.Open(sealed, []byte(aad))
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrUnreadable, aad, err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%w: %s: not the JSON value expected", ErrUnreadable, aad)
	}
	return nil
}

// Differs reports whether a PATCH's secret v (nil: remove) differs from the
// value sealed bound to aad. The stored value is opened to compare (a few
// microseconds); when it cannot be opened (its key left the ring) the new value
// counts as a change, which is how such a secret is repaired.
func Differs[T any](ring *keyring.Ring, aad string, sealed []byte, v *T) bool {
	if v == nil || sealed == nil {
		return (v == nil) != (sealed == nil)
	}
	var stored T
	if err := Open(ring, aad, sealed, &stored); err != nil {
		return true
	}
	// Maps encode with sorted keys, so equal values encode to equal bytes.
	a, errA := json.Marshal(stored)
	b, errB := json.Marshal(*v)
	return errA != nil || errB != nil || !bytes.Equal(a, b)
}

// Deref returns *v, or nil: the value a Change puts in place.
func Deref[M ~map[string]V, V any](v *M) M {
	if v == nil {
		return nil
	}
	return *v
}
