package session

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
)

// secretBytes is the randomness of session and mail link tokens: 256 bits.
const secretBytes = 32

// secretLen is the length of a token's text: unpadded base64url of secretBytes.
var secretLen = base64.RawURLEncoding.EncodedLen(secretBytes)

// newSecret returns a fresh token and its SHA-256, the only form stored. A fast
// hash is enough: the token is high-entropy, so a leaked hash cannot be turned
// back into it, and lookups by hash cost nothing.
func newSecret() (token string, hash []byte, err error) {
	b := make([]byte, secretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", nil, fmt.Errorf("session token: %w", err)
	}
	token = base64.RawURLEncoding.EncodeToString(b)
	return token, hashSecret(token), nil
}

func hashSecret(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// WellFormed reports whether s can be a session or mail link token at all;
// anything else is refused without a database round trip.
func WellFormed(s string) bool {
	if len(s) != secretLen {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil
}
