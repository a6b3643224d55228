package web

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/svcdev/svc/internal/provider/catalog"
)

// TestNew: New accepts every web type and refuses what cannot work.
func TestNew(t *testing.T) {
	t.Parallel()
	reg, err := catalog.New(catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key := json.RawMessage(`{"api_key":"` + testKey + `"}`)
	for _, typ := range reg.List(catalog.KindWeb) {
		cfg := json.RawMessage(`{"base_url":"https://searx.example.org","search_engine_id":"cx"}`)
		c, err := NewClient(Provider{Type: typ.ID, Config: cfg, Credential: key})
		if err != nil {
			t.Fatalf("NewClient(%s): %v", typ.ID, err)
		}
		for _, op := range []catalog.Operation{catalog.OperationSearch, catalog.OperationFetch} {
			if c.Serves(op) != slices.Contains(typ.Operations, op) {
				t.Errorf("%s: Serves(%s) = %v, the type says %v", typ.ID, op, c.Serves(op), typ.Operations)
			}
		}
	}
	cases := []struct {
		name string
		p    Provider
		want string
	}{
		{"unknown", Provider{Type: "altavista", Credential: key}, "not a web provider type"},
		{"model type", Provider{Type: "openai", Credential: key}, "not a web provider type"},
		{"no credential", Provider{Type: "brave"}, "no credential is stored"},
		{"credential without key", Provider{Type: "tavily", Credential: json.RawMessage(`{}`)}, "no credential is stored"},
		{"credential not an object", Provider{Type: "tavily", Credential: json.RawMessage(`"` + testKey + `"`)}, "credential is not a JSON object"},
		{"google without engine", Provider{Type: "google_cse", Credential: key}, "config.search_engine_id is required"},
		{"searxng without base", Provider{Type: "searxng"}, "config.base_url is required"},
		{"config not an object", Provider{Type: "brave", Credential: key, Config: json.RawMessage(`[1]`)}, "config is not a JSON object"},
	}
	for _, tc := range cases {
		_, err := NewClient(tc.p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
		if err != nil {
			noSecrets(t, err.Error())
		}
	}
	if _, err := NewClient(Provider{Type: "openai"}); !errors.Is(err, ErrUnknownType) {
		t.Errorf("a model type: %v, want ErrUnknownType", err)
	}
	if _, err := NewClient(Provider{Type: "searxng", Config: json.RawMessage(`{"base_url":"http://searx.local"}`)}); err != nil {
		t.Errorf("searxng needs no credential: %v", err)
	}
}

// TestUnsupportedAndInvalid: an operation the type does not serve and bad
// input fail before any request.
func TestUnsupportedAndInvalid(t *testing.T) {
	t.Parallel()
	s, c := braveStand(t, ok(braveAnswer))
	if _, err := c.Fetch(context.Background(), pageURL); !errors.Is(err, ErrUnsupported) {
		t.Errorf("brave fetch: %v, want ErrUnsupported", err)
	}
	for _, q := range []string{"", "   ", strings.Repeat("é", MaxQueryChars+1)} {
		if _, err := c.Search(context.Background(), SearchRequest{Query: q}); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("query of %d bytes: %v, want ErrInvalidInput", len(q), err)
		}
	}
	if _, err := c.Search(context.Background(), SearchRequest{Query: strings.Repeat("é", MaxQueryChars)}); err != nil {
		t.Errorf("a query of exactly %d characters: %v", MaxQueryChars, err)
	}
	j := newTestClient(t, "jina", map[string]any{"reader_url": s.srv.URL})
	for _, u := range []string{"", "/relative", "go.dev/doc", "ftp://go.dev/", "file:///etc/passwd", "https://", "https://user:pw@go.dev/", "javascript:alert(1)", "https://go.dev/" + strings.Repeat("a", MaxURLBytes)} {
		if _, err := j.Fetch(context.Background(), u); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("fetch %.40q: %v, want ErrInvalidInput", u, err)
		}
	}
	if n := len(s.requests()); n != 1 {
		t.Fatalf("%d requests reached the vendor, want only the valid search", n)
	}
}
