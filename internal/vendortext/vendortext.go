// Package vendortext makes text that another system wrote (a model vendor's
// error, a container engine's message, a connector's answer) safe to show:
// valid UTF-8, secrets taken out, one line, and short.
package vendortext

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Redacted stands for each secret Clean takes out.
const Redacted = "[redacted]"

// Clean answers s as one printable line of at most max bytes (and "..."
// when cut): invalid UTF-8 is replaced, every secret (and, for secrets
// longer than 8 bytes, its first 8 bytes, which vendors echo as
// "sk-abc12***") becomes Redacted, and each run of white space and
// control characters becomes one space. Secrets shorter than 4 bytes are
// ignored: they would redact ordinary words.
func Clean(s string, max int, secrets ...string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	for _, secret := range secrets {
		if len(secret) < 4 {
			continue
		}
		s = strings.ReplaceAll(s, secret, Redacted)
		if len(secret) > 8 {
			s = strings.ReplaceAll(s, secret[:8], Redacted)
		}
	}
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}
