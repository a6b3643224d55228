package webui

import (
	"strconv"
	"strings"
)

// acceptsGzip reports whether the Accept-Encoding field values allow a gzip
// response (RFC 9110, section 12.5.3). An explicit "gzip" (or its alias
// "x-gzip") entry decides; otherwise a "*" entry does; otherwise gzip is not
// acceptable. An entry is acceptable when its q-value is above zero, so
// "gzip;q=0" refuses gzip even if "*" allows everything else. Entries with a
// malformed q-value are treated as refusals, which falls back to the always
// safe identity encoding.
func acceptsGzip(fieldValues []string) bool {
	gzipQ, starQ := -1.0, -1.0 // -1: not mentioned
	for _, value := range fieldValues {
		for _, entry := range strings.Split(value, ",") {
			coding, q, ok := parseCoding(entry)
			if !ok {
				continue
			}
			switch coding {
			case "gzip", "x-gzip":
				gzipQ = max(gzipQ, q)
			case "*":
				starQ = max(starQ, q)
			}
		}
	}
	if gzipQ >= 0 {
		return gzipQ > 0
	}
	return starQ > 0
}

// parseCoding splits one Accept-Encoding entry such as "gzip;q=0.8" into its
// lower-cased coding and q-value (1 when absent). A malformed q-value yields
// q=0. ok is false for empty entries.
func parseCoding(entry string) (coding string, q float64, ok bool) {
	coding, params, _ := strings.Cut(entry, ";")
	coding = strings.ToLower(strings.TrimSpace(coding))
	if coding == "" {
		return "", 0, false
	}
	q = 1
	for param := range strings.SplitSeq(params, ";") {
		name, val, _ := strings.Cut(param, "=")
		if !strings.EqualFold(strings.TrimSpace(name), "q") {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil || v < 0 || v > 1 {
			v = 0
		}
		q = v
	}
	return coding, q, true
}

// etagMatches implements the If-None-Match check (RFC 9110, section 13.1.2):
// true when a field value is "*" or lists etag, using the weak comparison the
// RFC prescribes for this header (a W/ prefix on the client's tag is ignored).
func etagMatches(fieldValues []string, etag string) bool {
	for _, value := range fieldValues {
		for _, candidate := range strings.Split(value, ",") {
			candidate = strings.TrimSpace(candidate)
			if candidate == "*" {
				return true
			}
			if strings.TrimPrefix(candidate, "W/") == etag {
				return true
			}
		}
	}
	return false
}
