package connection

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
)

var validName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// TestNames: names are valid and unique whatever the slugs look like.
func TestNames(t *testing.T) {
	t.Parallel()
	n := newNamer()
	long := strings.Repeat("A", 80)
	cases := []struct {
		alias, slug, conn, want string
	}{
		{"", "GITHUB_CREATE_AN_ISSUE", "con_1", "GITHUB_CREATE_AN_ISSUE"},
		{"c2", "GITHUB_CREATE_AN_ISSUE", "con_2", "c2_GITHUB_CREATE_AN_ISSUE"},
		{"", "odd.action:name", "con_1", "odd_action_name"},
		{"", "odd_action_name", "con_3", ""}, // taken: gets a hash
		{"", long, "con_1", ""},
		{"", long + "B", "con_1", ""}, // same first 55 characters, another hash
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		got, ok := n.name(tc.alias, tc.slug, tc.conn)
		if !ok || !validName.MatchString(got) || seen[got] {
			t.Fatalf("name(%q, %q) = %q, %v; seen %v", tc.alias, tc.slug, got, ok, seen)
		}
		if tc.want != "" && got != tc.want {
			t.Fatalf("name(%q, %q) = %q, want %q", tc.alias, tc.slug, got, tc.want)
		}
		seen[got] = true
	}
}

// TestParameters: input schemas become object schemas; others are refused.
func TestParameters(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want string // "" when refused
	}{
		{``, `{"type":"object","properties":{}}`},
		{`null`, `{"type":"object","properties":{}}`},
		{`{"properties":{"a":{"type":"string"}}}`, `{"type":"object","properties":{"a":{"type":"string"}}}`},
		{`{"type":"object"}`, `{"type":"object","properties":{}}`},
		{`{"type":"array"}`, ""},
		{`[1]`, ""},
		{`{"type":"object","description":"` + strings.Repeat("x", maxParameterBytes) + `"}`, ""},
	}
	for _, tc := range cases {
		got, ok := parameters(json.RawMessage(tc.in))
		if tc.want == "" {
			if ok {
				t.Fatalf("parameters(%.40q) accepted: %s", tc.in, got)
			}
			continue
		}
		var a, b any
		if !ok || json.Unmarshal(got, &a) != nil || json.Unmarshal([]byte(tc.want), &b) != nil {
			t.Fatalf("parameters(%q) = %s, %v", tc.in, got, ok)
		}
		ga, _ := json.Marshal(a)
		gb, _ := json.Marshal(b)
		if string(ga) != string(gb) {
			t.Fatalf("parameters(%q) = %s, want %s", tc.in, ga, gb)
		}
	}
}

// TestCacheBound: the cache keeps at most maxCacheEntries, dropping the
// entry closest to expiry, and drops expired entries.
func TestCacheBound(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	c := newCache(time.Minute, func() time.Time { return now })
	for i := range maxCacheEntries + 1 {
		c.put(string(rune('a'+i%26))+strings.Repeat("k", i/26), catalog{})
		now = now.Add(time.Millisecond)
	}
	if len(c.entries) != maxCacheEntries {
		t.Fatalf("%d entries, want %d", len(c.entries), maxCacheEntries)
	}
	if _, ok := c.get("a"); ok {
		t.Fatal("the oldest entry was kept")
	}
	if _, ok := c.get("b"); !ok {
		t.Fatal("a live entry was dropped")
	}
	now = now.Add(time.Minute)
	if _, ok := c.get("b"); ok {
		t.Fatal("an expired entry was answered")
	}
}
