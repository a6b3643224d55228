// Package jsonguard is a strict pre-check for JSON request bodies, run before
// any decoding.
//
// Go's encoding/json is lenient in ways that matter for an API: it accepts
// duplicate object keys (the last one wins), a Decoder ignores data after the
// first value, and invalid UTF-8 and unpaired surrogate escapes silently become
// U+FFFD. PostgreSQL, on the other side, rejects \u0000 in text and jsonb, which
// would otherwise surface as a 500. Check refuses all of these up front, so a
// handler can answer 400 invalid_argument with the offending field.
//
// Check is a single pass over the bytes with an explicit stack (no recursion,
// no reflection) and does not allocate for typical bodies.
package jsonguard

import (
	"strconv"
	"strings"
	"sync"
)

// MaxDepth is the deepest nesting of objects and arrays Check accepts.
const MaxDepth = 64

// Error describes why a body was refused.
type Error struct {
	// Field is the path of the offending member, such as "config.headers" or
	// "items[2].name"; "" means the document itself. Keys that are not plain
	// identifiers are written in brackets, e.g. `labels["a.b"]`.
	Field string
	// Reason is a short human-readable explanation, safe to return to clients:
	// it never quotes more than about 40 bytes of the input.
	Reason string
}

// Error implements the error interface.
func (e *Error) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return e.Field + ": " + e.Reason
}

// Check returns nil if body is exactly one well-formed JSON value (surrounded
// only by whitespace) with no duplicate keys in any object, valid UTF-8
// throughout, no NUL characters in strings or keys, no unpaired surrogate
// escapes, and nesting no deeper than MaxDepth. Otherwise it returns an *Error.
// Check never modifies or retains body.
func Check(body []byte) error {
	c := checkers.Get().(*checker)
	c.buf = body
	err := c.run()
	c.reset()
	checkers.Put(c)
	if err != nil {
		return err
	}
	return nil
}

// checkers recycles scanners, so the key stack and maps are reused across calls.
var checkers = sync.Pool{New: func() any { return new(checker) }}

// frame is one open object or array.
type frame struct {
	array  bool
	index  int    // array: index of the current element
	hasKey bool   // object: key holds the current member's key
	key    []byte // object: current member key, unescaped
	// keyStart is where this object's keys begin in checker.keys. Objects
	// beyond smallObject keys move to set for O(1) duplicate lookups.
	keyStart int
	set      map[string]struct{}
}

// smallObject is how many keys an object may have before duplicate detection
// switches from a linear scan to a map.
const smallObject = 16

// checker is the scanner state. Its slices and maps are reused through checkers.
type checker struct {
	buf    []byte
	pos    int
	depth  int
	frames [MaxDepth]frame
	keys   [][]byte // keys of all open small objects, innermost last
	arena  []byte   // unescaped copies of keys that contain escapes
	maps   [MaxDepth]map[string]struct{}
}

// reset drops every reference to the body so pooled checkers do not retain it,
// and drops buffers that grew unusually large.
func (c *checker) reset() {
	c.buf = nil
	clear(c.keys[:cap(c.keys)])
	c.keys = c.keys[:0]
	if cap(c.keys) > 1024 {
		c.keys = nil
	}
	c.arena = c.arena[:0]
	if cap(c.arena) > 64<<10 {
		c.arena = nil
	}
	for i := range c.depth {
		c.frames[i] = frame{}
	}
	for i := range c.maps {
		c.recycleMap(i) // objects left open by an error
	}
	c.depth = 0
	c.pos = 0
}

// run checks the whole document.
func (c *checker) run() *Error {
	c.skipSpace()
	if c.pos == len(c.buf) {
		return &Error{Reason: "empty body"}
	}
	for {
		// A value is expected at c.pos.
		if err := c.value(); err != nil {
			return err
		}
		// Close finished containers and move on to the next element or member.
		for {
			c.skipSpace()
			if c.depth == 0 {
				if c.pos != len(c.buf) {
					return &Error{Reason: "trailing data after JSON value"}
				}
				return nil
			}
			f := &c.frames[c.depth-1]
			if c.pos == len(c.buf) {
				return c.eof()
			}
			ch := c.buf[c.pos]
			if ch == ',' {
				c.pos++
				if f.array {
					f.index++
				} else if err := c.member(f); err != nil {
					return err
				}
				break
			}
			if (f.array && ch == ']') || (!f.array && ch == '}') {
				c.pos++
				c.pop()
				continue
			}
			if f.array {
				return c.unexpected("after array element (want ',' or ']')")
			}
			return c.unexpected("after object member (want ',' or '}')")
		}
	}
}

// value scans one value at c.pos. An opened container is pushed and the loop
// moves on to its first element or member value, so nesting never recurses;
// run closes containers and advances to later elements.
func (c *checker) value() *Error {
	for {
		c.skipSpace()
		if c.pos == len(c.buf) {
			return c.eof()
		}
		switch ch := c.buf[c.pos]; {
		case ch == '{' || ch == '[':
			array := ch == '['
			f, err := c.push(array)
			if err != nil {
				return err
			}
			c.skipSpace()
			if c.pos < len(c.buf) && ((array && c.buf[c.pos] == ']') || (!array && c.buf[c.pos] == '}')) {
				c.pos++
				c.pop()
				return nil
			}
			if !array {
				if err := c.member(f); err != nil {
					return err
				}
			}
			continue
		case ch == '"':
			_, err := c.str(false)
			return err
		case ch == '-' || (ch >= '0' && ch <= '9'):
			return c.number()
		case ch == 't':
			return c.literal("true")
		case ch == 'f':
			return c.literal("false")
		case ch == 'n':
			return c.literal("null")
		}
		return c.unexpected("looking for a value")
	}
}

// member scans an object member's key and the ':' after it, checking the key
// against the object's earlier keys.
func (c *checker) member(f *frame) *Error {
	f.hasKey = false
	c.skipSpace()
	if c.pos == len(c.buf) {
		return c.eof()
	}
	if c.buf[c.pos] != '"' {
		return c.unexpected("looking for an object key")
	}
	key, err := c.str(true)
	if err != nil {
		return err
	}
	if c.duplicate(f, key) {
		// Name the repeated member itself: "config.base_url", not "config".
		f.key, f.hasKey = key, true
		return &Error{Field: c.path(), Reason: "duplicate key " + quote(key)}
	}
	c.skipSpace()
	if c.pos == len(c.buf) {
		return c.eof()
	}
	if c.buf[c.pos] != ':' {
		return c.unexpected("after object key (want ':')")
	}
	c.pos++
	f.key, f.hasKey = key, true
	return nil
}

// duplicate records key in the current object and reports whether it was
// already there. Small objects use a linear scan of a shared slice; larger
// ones move to a (pooled) map.
func (c *checker) duplicate(f *frame, key []byte) bool {
	if f.set != nil {
		if _, ok := f.set[string(key)]; ok {
			return true
		}
		f.set[string(key)] = struct{}{}
		return false
	}
	own := c.keys[f.keyStart:]
	for _, k := range own {
		if string(k) == string(key) {
			return true
		}
	}
	if len(own) < smallObject {
		c.keys = append(c.keys, key)
		return false
	}
	m := c.maps[c.depth-1]
	if m == nil {
		m = make(map[string]struct{}, 2*smallObject)
		c.maps[c.depth-1] = m
	}
	for _, k := range own {
		m[string(k)] = struct{}{}
	}
	m[string(key)] = struct{}{}
	f.set = m
	clear(own)
	c.keys = c.keys[:f.keyStart]
	return false
}

func (c *checker) push(array bool) (*frame, *Error) {
	if c.depth == MaxDepth {
		return nil, &Error{Field: c.path(), Reason: "nesting deeper than " + strconv.Itoa(MaxDepth) + " levels"}
	}
	c.pos++
	f := &c.frames[c.depth]
	*f = frame{array: array, keyStart: len(c.keys)}
	c.depth++
	return f, nil
}

func (c *checker) pop() {
	c.depth--
	f := &c.frames[c.depth]
	if f.set != nil {
		c.recycleMap(c.depth)
	} else if !f.array {
		clear(c.keys[f.keyStart:])
		c.keys = c.keys[:f.keyStart]
	}
	*f = frame{}
}

// recycleMap empties the key map of depth i for reuse, or drops it if it grew
// so large that keeping its memory in the pool is not worth it.
func (c *checker) recycleMap(i int) {
	const maxPooledKeys = 1024
	switch m := c.maps[i]; {
	case len(m) > maxPooledKeys:
		c.maps[i] = nil
	case len(m) > 0:
		clear(m)
	}
}

func (c *checker) skipSpace() {
	for c.pos < len(c.buf) {
		switch c.buf[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

// path renders the location of the current value, e.g. "items[2].name".
// Long paths keep their innermost part, so the whole field stays short.
func (c *checker) path() string {
	const maxPath = 120
	var b strings.Builder
	for i := range c.depth {
		f := &c.frames[i]
		switch {
		case f.array:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(f.index))
			b.WriteByte(']')
		case f.hasKey:
			if plainKey(f.key) {
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.Write(f.key)
			} else {
				b.WriteByte('[')
				b.WriteString(quote(f.key))
				b.WriteByte(']')
			}
		}
	}
	p := b.String()
	if len(p) > maxPath {
		p = p[len(p)-maxPath:]
		// Restart at a segment boundary so the tail stays readable.
		if i := strings.IndexAny(p, ".["); i >= 0 {
			p = p[i:]
		}
		p = "..." + strings.TrimPrefix(p, ".")
	}
	return p
}

// plainKey reports whether key can appear in a dotted path unquoted.
func plainKey(key []byte) bool {
	if len(key) == 0 || len(key) > maxQuoted {
		return false
	}
	for _, ch := range key {
		if !(ch == '_' || ch == '-' || ch == '$' || ch == '@' ||
			(ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')) {
			return false
		}
	}
	return true
}

// maxQuoted bounds how much of the input a message may quote.
const maxQuoted = 32

// quote renders s as a Go-quoted string of at most maxQuoted input bytes.
func quote(s []byte) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(string(s))
	}
	cut := maxQuoted
	for cut > 0 && s[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
		cut--
	}
	return strconv.Quote(string(s[:cut])) + "..."
}
