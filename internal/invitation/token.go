package invitation

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/url"
)

// tokenBytes is the token's randomness: 256 bits.
const tokenBytes = 32

// tokenLen is the length of a token's text: unpadded base64url of tokenBytes.
var tokenLen = base64.RawURLEncoding.EncodedLen(tokenBytes)

// newToken returns a fresh token and its SHA-256, the only form stored. A fast
// hash is right: the token is high-entropy, so it cannot be guessed offline.
func newToken() (token string, hash []byte, err error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", nil, fmt.Errorf("invitation token: %w", err)
	}
	token = base64.RawURLEncoding.EncodeToString(b)
	return token, hashToken(token), nil
}

func hashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// wellFormed reports whether s can be a token at all; other strings are refused
// without a database round trip.
func wellFormed(s string) bool {
	if len(s) != tokenLen {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil
}

// acceptURL is the console page that accepts the invitation with token.
func (s *Service) acceptURL(token string) string {
	return s.publicURL + "/invitations/accept?token=" + url.QueryEscape(token)
}
