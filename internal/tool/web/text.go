package web

import (
	"fmt"
	"html"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// CheckURL reports whether raw may be given to fetch: an absolute http or
// https URL with a host, no credentials, at most MaxURLBytes. The error wraps
// ErrInvalidInput and does not repeat the URL.
func CheckURL(raw string) error {
	if raw == "" {
		return fmt.Errorf("%w: the url is empty", ErrInvalidInput)
	}
	if len(raw) > MaxURLBytes {
		return fmt.Errorf("%w: the url is longer than %d bytes", ErrInvalidInput, MaxURLBytes)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("%w: the url does not parse", ErrInvalidInput)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%w: the url must be absolute and start with http:// or https://", ErrInvalidInput)
	case u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("%w: the url has no host", ErrInvalidInput)
	case u.User != nil:
		return fmt.Errorf("%w: the url must not carry a user name or password", ErrInvalidInput)
	}
	return nil
}

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	out, _ := bound(s, n)
	return out
}

// bound cuts s to at most n bytes on a rune boundary and says whether it cut.
// Invalid UTF-8 in s is replaced first, so the result is always valid.
func bound(s string, n int) (string, bool) {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s, false
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut], true
}

// oneLine collapses runs of white space (line ends included) into one space.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

var tag = regexp.MustCompile(`<[^>]{0,200}>`)

// stripHTML removes the markup vendors put in snippets (<strong>...) and
// decodes entities.
func stripHTML(s string) string { return html.UnescapeString(tag.ReplaceAllString(s, "")) }

// dateLayouts are the date forms vendors send: ISO 8601 with or without a
// zone or fraction, and Google's "Jan 2, 2006".
var dateLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05",
	"2006-01-02",
	"Jan 2, 2006",
	"January 2, 2006",
	"2 Jan 2006",
	time.RFC1123,
	time.RFC1123Z,
}

// parseDate reads a vendor's publication date; nil when absent or in a form
// not known (relative ones such as "3 days ago").
func parseDate(s string) *time.Time {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	for _, l := range dateLayouts {
		if t, err := time.Parse(l, s); err == nil {
			t = t.UTC()
			return &t
		}
	}
	return nil
}
