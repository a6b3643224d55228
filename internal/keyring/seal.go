package keyring

import (
	"crypto/rand"
	"errors"
	"fmt"
)

// Sealed value layout; see the package documentation.
const (
	sealVersion = 1
	nonceSize   = 12 // standard 96-bit GCM nonce
	tagSize     = 16
)

var (
	// ErrUnknownKey means a sealed value names a key id that is not in the ring,
	// typically because a key was removed while values sealed under it remain.
	ErrUnknownKey = errors.New("keyring: unknown key")
	// ErrDecrypt means a sealed value is malformed, was tampered with, or is
	// opened with different additional data than it was sealed with.
	ErrDecrypt = errors.New("keyring: cannot decrypt")
)

// Seal encrypts plaintext under the primary key. aad binds the result to a
// context (for example the id of the provider that owns the secret): Open
// must be given the same aad. Each call uses a fresh random nonce, so sealing
// the same plaintext twice gives different results.
func (r *Ring) Seal(plaintext, aad []byte) ([]byte, error) {
	id := r.primary
	aead := r.keys[id]
	hdr := 2 + len(id)

	out := make([]byte, hdr+nonceSize, hdr+nonceSize+len(plaintext)+tagSize)
	out[0] = sealVersion
	out[1] = byte(len(id))
	copy(out[2:], id)
	nonce := out[hdr : hdr+nonceSize]
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("keyring: read nonce: %w", err)
	}
	return aead.Seal(out, nonce, plaintext, additionalData(out[:hdr], aad)), nil
}

// Open decrypts a value made by Seal with any key still in the ring. It fails
// with an error wrapping ErrUnknownKey (naming the id) if the sealing key is
// not in the ring, and with an error wrapping ErrDecrypt if the value is
// malformed, altered, or aad differs from the one given to Seal. It never
// returns unauthenticated data.
func (r *Ring) Open(sealed, aad []byte) ([]byte, error) {
	id, hdr, err := parseHeader(sealed)
	if err != nil {
		return nil, err
	}
	aead, ok := r.keys[id]
	if !ok {
		return nil, fmt.Errorf("%w %s: the value was sealed with a key that is not in the key ring", ErrUnknownKey, id)
	}
	if len(sealed) < hdr+nonceSize+tagSize {
		return nil, fmt.Errorf("%w: sealed value is truncated", ErrDecrypt)
	}
	nonce := sealed[hdr : hdr+nonceSize]
	plaintext, err := aead.Open(nil, nonce, sealed[hdr+nonceSize:], additionalData(sealed[:hdr], aad))
	if err != nil {
		return nil, fmt.Errorf("%w: authentication failed (wrong context, wrong key, or altered data)", ErrDecrypt)
	}
	return plaintext, nil
}

// SealedKeyID returns the id of the key that sealed a value, without
// decrypting it. It lets a migration find values not yet under the primary.
func SealedKeyID(sealed []byte) (string, error) {
	id, _, err := parseHeader(sealed)
	return id, err
}

// parseHeader validates the version and key id and returns the id and the
// header length. Malformed headers wrap ErrDecrypt; the id is only returned
// once it is known to be well formed, so errors never echo arbitrary bytes.
func parseHeader(sealed []byte) (id string, hdr int, err error) {
	if len(sealed) < 2 {
		return "", 0, fmt.Errorf("%w: sealed value is truncated", ErrDecrypt)
	}
	if sealed[0] != sealVersion {
		return "", 0, fmt.Errorf("%w: unsupported sealed value format version %d", ErrDecrypt, sealed[0])
	}
	hdr = 2 + int(sealed[1])
	if len(sealed) < hdr {
		return "", 0, fmt.Errorf("%w: sealed value is truncated", ErrDecrypt)
	}
	id = string(sealed[2:hdr])
	if !validID(id) {
		return "", 0, fmt.Errorf("%w: sealed value has a malformed key id", ErrDecrypt)
	}
	return id, hdr, nil
}

// additionalData is the GCM additional data: the sealed value's header
// followed by the caller's aad. The header has a self-delimiting length, so
// the concatenation is unambiguous.
func additionalData(header, aad []byte) []byte {
	ad := make([]byte, 0, len(header)+len(aad))
	return append(append(ad, header...), aad...)
}
