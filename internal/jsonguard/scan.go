package jsonguard

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// plain[b] is true for bytes that may appear unescaped in a string without any
// further check: printable ASCII other than '"' and '\\'.
var plain = func() (t [256]bool) {
	for b := 0x20; b < 0x80; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()

// str scans the string starting at the '"' at c.pos and leaves c.pos after the
// closing quote. For keys it returns the unescaped key: a sub-slice of the
// input when there are no escapes, else a copy in c.arena.
func (c *checker) str(isKey bool) ([]byte, *Error) {
	b := c.buf
	start := c.pos + 1
	i := start
	escaped := false
	for {
		for i < len(b) && plain[b[i]] {
			i++
		}
		if i == len(b) {
			return nil, c.eof()
		}
		switch ch := b[i]; {
		case ch == '"':
			c.pos = i + 1
			if !isKey {
				return nil, nil
			}
			if !escaped {
				return b[start:i], nil
			}
			return c.unescape(b[start:i]), nil
		case ch == '\\':
			n, err := c.escape(i, isKey)
			if err != nil {
				return nil, err
			}
			escaped = true
			i += n
		case ch == 0:
			return nil, c.stringErr(isKey, "string contains NUL (\\u0000)", "key contains NUL (\\u0000)")
		case ch < 0x20:
			c.pos = i
			return nil, c.syntax("control character in string")
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return nil, c.stringErr(isKey, "invalid UTF-8", "invalid UTF-8 in key")
			}
			i += size
		}
	}
}

// escape validates the escape sequence at b[i] == '\\' and returns its length.
// A high surrogate escape must be directly followed by a low surrogate escape;
// the pair counts as one 12-byte sequence.
func (c *checker) escape(i int, isKey bool) (int, *Error) {
	b := c.buf
	if i+1 >= len(b) {
		return 0, c.eof()
	}
	switch b[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, nil
	case 'u':
	default:
		c.pos = i
		return 0, c.syntax("invalid escape in string")
	}
	r, ok := hex4(b, i+2)
	if !ok {
		c.pos = i
		return 0, c.syntax("invalid \\u escape")
	}
	switch {
	case r == 0:
		return 0, c.stringErr(isKey, "string contains NUL (\\u0000)", "key contains NUL (\\u0000)")
	case r >= 0xDC00 && r <= 0xDFFF:
		return 0, c.stringErr(isKey, "unpaired surrogate escape", "unpaired surrogate escape in key")
	case r >= 0xD800 && r <= 0xDBFF:
		if i+7 < len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
			lo, ok := hex4(b, i+8)
			if !ok {
				c.pos = i + 6
				return 0, c.syntax("invalid \\u escape")
			}
			if lo >= 0xDC00 && lo <= 0xDFFF {
				return 12, nil
			}
		}
		return 0, c.stringErr(isKey, "unpaired surrogate escape", "unpaired surrogate escape in key")
	}
	return 6, nil
}

// hex4 decodes the four hex digits at b[i:i+4].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, ch := range b[i : i+4] {
		switch {
		case ch >= '0' && ch <= '9':
			ch -= '0'
		case ch >= 'a' && ch <= 'f':
			ch -= 'a' - 10
		case ch >= 'A' && ch <= 'F':
			ch -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(ch)
	}
	return r, true
}

// unescape decodes an already validated string body into c.arena. Earlier
// keys stay valid when the arena grows, because append never rewrites bytes
// that a previous slice points at.
func (c *checker) unescape(s []byte) []byte {
	start := len(c.arena)
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			j := i + 1
			for j < len(s) && s[j] != '\\' {
				j++
			}
			c.arena = append(c.arena, s[i:j]...)
			i = j
			continue
		}
		switch e := s[i+1]; e {
		case 'u':
			r, _ := hex4(s, i+2)
			i += 6
			if utf16.IsSurrogate(r) { // validated: a low surrogate escape follows
				lo, _ := hex4(s, i+2)
				r = utf16.DecodeRune(r, lo)
				i += 6
			}
			c.arena = utf8.AppendRune(c.arena, r)
			continue
		case 'b':
			c.arena = append(c.arena, '\b')
		case 'f':
			c.arena = append(c.arena, '\f')
		case 'n':
			c.arena = append(c.arena, '\n')
		case 'r':
			c.arena = append(c.arena, '\r')
		case 't':
			c.arena = append(c.arena, '\t')
		default: // '"', '\\', '/'
			c.arena = append(c.arena, e)
		}
		i += 2
	}
	return c.arena[start:len(c.arena):len(c.arena)]
}

// number scans a JSON number at c.pos:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
// It also refuses numbers beyond float64's range (such as 1e400), which
// encoding/json cannot decode into an interface value and which no field of
// the API can hold.
func (c *checker) number() *Error {
	b := c.buf
	start := c.pos
	if b[c.pos] == '-' {
		c.pos++
	}
	if c.pos == len(b) {
		return c.eof()
	}
	intStart := c.pos
	switch ch := b[c.pos]; {
	case ch == '0':
		c.pos++
	case ch >= '1' && ch <= '9':
		c.digits()
	default:
		return c.unexpected("in number")
	}
	intDigits := c.pos - intStart
	if c.pos < len(b) && b[c.pos] == '.' {
		c.pos++
		if err := c.requireDigits(); err != nil {
			return err
		}
	}
	exponent := false
	if c.pos < len(b) && (b[c.pos] == 'e' || b[c.pos] == 'E') {
		exponent = true
		c.pos++
		if c.pos < len(b) && (b[c.pos] == '+' || b[c.pos] == '-') {
			c.pos++
		}
		if err := c.requireDigits(); err != nil {
			return err
		}
	}
	// Without an exponent only an integer part of more than 308 digits can
	// reach math.MaxFloat64, so the common case needs no parsing.
	if exponent || intDigits > 308 {
		if _, err := strconv.ParseFloat(string(b[start:c.pos]), 64); err != nil {
			return &Error{Field: c.path(), Reason: "number out of range"}
		}
	}
	return nil
}

func (c *checker) digits() {
	for c.pos < len(c.buf) && c.buf[c.pos] >= '0' && c.buf[c.pos] <= '9' {
		c.pos++
	}
}

func (c *checker) requireDigits() *Error {
	if c.pos == len(c.buf) {
		return c.eof()
	}
	if ch := c.buf[c.pos]; ch < '0' || ch > '9' {
		return c.unexpected("in number")
	}
	c.digits()
	return nil
}

// literal scans true, false or null.
func (c *checker) literal(lit string) *Error {
	for i := 0; i < len(lit); i++ {
		if c.pos == len(c.buf) {
			return c.eof()
		}
		if c.buf[c.pos] != lit[i] {
			return c.unexpected("in literal " + lit)
		}
		c.pos++
	}
	return nil
}

// stringErr reports a problem with a string's content. For a key the field
// is the enclosing object (the key is not a member yet), for a value it is
// the value itself.
func (c *checker) stringErr(isKey bool, valueReason, keyReason string) *Error {
	if isKey {
		return &Error{Field: c.path(), Reason: keyReason}
	}
	return &Error{Field: c.path(), Reason: valueReason}
}

func (c *checker) eof() *Error {
	return &Error{Field: c.path(), Reason: "malformed JSON: unexpected end of input"}
}

func (c *checker) syntax(msg string) *Error {
	return &Error{Field: c.path(), Reason: "malformed JSON: " + msg + " at offset " + strconv.Itoa(c.pos)}
}

// unexpected reports the character at c.pos, which does not fit the grammar.
// Outside strings any byte of 0x80 and above is an error; if it does not even
// start valid UTF-8 that is the clearer message.
func (c *checker) unexpected(context string) *Error {
	if c.pos == len(c.buf) {
		return c.eof()
	}
	r, size := utf8.DecodeRune(c.buf[c.pos:])
	if r == utf8.RuneError && size == 1 {
		return &Error{Field: c.path(), Reason: "invalid UTF-8"}
	}
	return c.syntax("unexpected " + strconv.QuoteRune(r) + " " + context)
}
