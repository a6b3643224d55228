package httpapi

import (
	"strconv"
	"strings"
)

// byteRange is the part of a representation a Range header selects.
type byteRange struct {
	Start, Length int64
}

// rangeOutcome is how a download answers a Range header.
type rangeOutcome int

const (
	// rangeWhole: no usable range; the whole content, 200.
	rangeWhole rangeOutcome = iota
	// rangePartial: one satisfiable range, 206.
	rangePartial
	// rangeUnsatisfiable: a range that starts past the end, 416.
	rangeUnsatisfiable
)

// parseRange reads a Range header against content of size bytes (RFC 9110
// 14.1-14.2). Only one range is served: a header with several, or in a unit
// other than bytes, or malformed, is ignored and the whole content is sent,
// as the RFC allows. A range on empty content is ignored too, since no
// Content-Range can describe part of nothing.
func parseRange(header string, size int64) (byteRange, rangeOutcome) {
	unit, spec, ok := strings.Cut(strings.TrimSpace(header), "=")
	if !ok || !strings.EqualFold(strings.TrimSpace(unit), "bytes") || strings.Contains(spec, ",") || size == 0 {
		return byteRange{}, rangeWhole
	}
	first, last, ok := strings.Cut(strings.TrimSpace(spec), "-")
	if !ok {
		return byteRange{}, rangeWhole
	}
	if first == "" { // bytes=-N: the last N bytes
		n, ok := digits(last)
		if !ok {
			return byteRange{}, rangeWhole
		}
		if n == 0 {
			return byteRange{}, rangeUnsatisfiable
		}
		n = min(n, size)
		return byteRange{Start: size - n, Length: n}, rangePartial
	}
	start, ok := digits(first)
	if !ok {
		return byteRange{}, rangeWhole
	}
	end := size - 1
	if last != "" {
		if end, ok = digits(last); !ok || end < start {
			return byteRange{}, rangeWhole
		}
		end = min(end, size-1)
	}
	if start >= size {
		return byteRange{}, rangeUnsatisfiable
	}
	return byteRange{Start: start, Length: end - start + 1}, rangePartial
}

// digits parses a non-empty run of ASCII digits (no sign, no spaces) that fits
// in an int64.
func digits(s string) (int64, bool) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// etagMatches reports whether an If-None-Match or If-Range value names etag.
// weak compares as If-None-Match does (W/ ignored, "*" matches anything);
// otherwise the comparison is strong, as If-Range requires: exactly the
// quoted tag.
func etagMatches(header, etag string, weak bool) bool {
	for _, tag := range strings.Split(header, ",") {
		tag = strings.TrimSpace(tag)
		if weak {
			if tag == "*" {
				return true
			}
			tag = strings.TrimPrefix(tag, "W/")
		}
		if tag == etag {
			return true
		}
	}
	return false
}
