package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"hash/crc32"
	"strings"
)

// Tokens are "svc_" + 43 base62 characters (256 random bits) + 6 base62
// characters of CRC-32 checksum. The checksum lets malformed tokens (typos,
// truncation) be refused without a database round trip, and lets secret scanners
// recognise real tokens.
const (
	TokenPrefix   = "svc_"
	secretLen     = 43
	checksumLen   = 6
	tokenLen      = len(TokenPrefix) + secretLen + checksumLen
	displayPrefix = 8
	base62        = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)

// Token is a new secret with what is stored of it.
type Token struct {
	Secret string // shown once to the client
	Prefix string // the first characters after svc_, stored to recognise the key
	Hash   []byte // SHA-256 of Secret, the only thing stored to authenticate
}

// NewToken makes a new API key token.
func NewToken() (Token, error) {
	b := make([]byte, secretLen)
	if _, err := rand.Read(b); err != nil {
		return Token{}, err
	}
	// Rejection sampling: 62 does not divide 256, so bytes of 248 (4 x 62) and
	// above are skipped to keep every character equally likely.
	secret := make([]byte, 0, secretLen)
	for len(secret) < secretLen {
		for _, x := range b {
			if x < 248 && len(secret) < secretLen {
				secret = append(secret, base62[x%62])
			}
		}
		if _, err := rand.Read(b); err != nil {
			return Token{}, err
		}
	}
	s := TokenPrefix + string(secret) + checksum(string(secret))
	return Token{Secret: s, Prefix: string(secret[:displayPrefix]), Hash: HashToken(s)}, nil
}

func checksum(secret string) string {
	v := crc32.ChecksumIEEE([]byte(secret))
	out := make([]byte, checksumLen)
	for i := checksumLen - 1; i >= 0; i-- {
		out[i] = base62[v%62]
		v /= 62
	}
	return string(out)
}

// WellFormed reports whether s has the shape and checksum of a token.
func WellFormed(s string) bool {
	if len(s) != tokenLen || !strings.HasPrefix(s, TokenPrefix) {
		return false
	}
	body := s[len(TokenPrefix):]
	for i := 0; i < len(body); i++ {
		if strings.IndexByte(base62, body[i]) < 0 {
			return false
		}
	}
	secret := body[:secretLen]
	return checksum(secret) == body[secretLen:]
}

// HashToken is what the database stores and is searched by.
func HashToken(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}
