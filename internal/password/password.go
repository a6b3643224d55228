// Package password hashes account passwords with argon2id using OWASP's
// recommended parameters (19 MiB of memory, 2 passes, 1 lane) and stores them in
// the PHC string format, so parameters can be raised later without breaking
// existing hashes.
package password

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Parameters of new hashes.
const (
	memoryKiB = 19 * 1024
	passes    = 2
	lanes     = 1
	saltLen   = 16
	keyLen    = 32
	// MinLength is the shortest password accepted.
	MinLength = 8
	// MaxLength bounds the work an attacker can ask of the hash.
	MaxLength = 1024
)

var b64 = base64.RawStdEncoding

// Unusable is an argon2id hash of a random, forgotten password, with the
// parameters of Hash. Checking a password against it when there is no real hash
// (an unknown address, an account without a password) costs what checking a
// wrong password costs, so the refusal's timing tells nothing.
const Unusable = "$argon2id$v=19$m=19456,t=2,p=1$ItYQBRK6tCcTDeB0KrLXBA$R/N0TfROhLz2L9MRQmBHlnSDN9RrWKpQBRe18f5ayrM"

// slots bounds how many hashes run at once: each takes 19 MiB and about 100 ms
// of CPU, so a burst of sign-ins (rate limits stop while Redis is lost) queues
// here instead of exhausting memory.
var slots = make(chan struct{}, 2*runtime.GOMAXPROCS(0))

func acquire() func() {
	slots <- struct{}{}
	return func() { <-slots }
}

// Hash returns the PHC string of an argon2id hash of pw.
func Hash(pw string) (string, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	release := acquire()
	key := argon2.IDKey([]byte(pw), salt, passes, memoryKiB, lanes, keyLen)
	release()
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, memoryKiB, passes, lanes, b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// Verify reports whether pw matches the PHC string, in constant time.
func Verify(pw, phc string) (bool, error) {
	parts := strings.Split(phc, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, errors.New("not an argon2id hash")
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, errors.New("unsupported argon2 version")
	}
	var m, t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil {
		return false, errors.New("malformed argon2 parameters")
	}
	salt, err := b64.DecodeString(parts[4])
	if err != nil {
		return false, errors.New("malformed salt")
	}
	want, err := b64.DecodeString(parts[5])
	if err != nil {
		return false, errors.New("malformed hash")
	}
	if m > 4*memoryKiB || t > 10*passes {
		return false, errors.New("argon2 parameters above this build's limits")
	}
	release := acquire()
	got := argon2.IDKey([]byte(pw), salt, t, m, p, uint32(len(want)))
	release()
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

// Validate checks a new password's length.
func Validate(pw string) error {
	switch {
	case len(pw) < MinLength:
		return fmt.Errorf("the password must have at least %d characters", MinLength)
	case len(pw) > MaxLength:
		return fmt.Errorf("the password must have at most %d characters", MaxLength)
	}
	return nil
}
