package outbox

import (
	"strings"
	"unicode/utf8"
)

// Snippet makes the first bytes of an answer storable and showable: a
// character the byte limit cut in two is dropped, invalid UTF-8 becomes
// U+FFFD, NUL (which PostgreSQL text refuses) is removed, and the result is at
// most ResponseSnippetBytes long, cut at a character boundary. The engine
// applies it to every Outcome.Response; deliverers that read a receiver's
// answer use it too.
func Snippet(b []byte) string {
	for n := 1; n <= utf8.UTFMax-1 && n <= len(b); n++ {
		if utf8.RuneStart(b[len(b)-n]) {
			if !utf8.FullRune(b[len(b)-n:]) {
				b = b[:len(b)-n]
			}
			break
		}
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "")
	if len(s) > ResponseSnippetBytes {
		cut := ResponseSnippetBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}
