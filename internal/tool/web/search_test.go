package web

import (
	"context"
	"net/http"
	"reflect"
	"testing"
)

// searchCase is one vendor's search protocol: the request it must receive
// and a real answer of the vendor with what it must map to.
type searchCase struct {
	typ    string
	method string
	// base is the path the base URL carries, path the request's path.
	base, path string
	member     string // config member of the base URL
	key        func(*http.Request) string
	config     map[string]any
	check      func(t *testing.T, r seen)
	answer     string
	want       []SearchResult
}

func searchCases() []searchCase {
	return []searchCase{
		{
			typ: "brave", method: "GET", base: "/res/v1", path: "/res/v1/web/search", member: "base_url",
			key: header("X-Subscription-Token"), config: map[string]any{"country": "de"},
			check: func(t *testing.T, r seen) {
				wantQuery(t, r, map[string]string{"q": "go generics", "count": "3", "country": "DE"})
				wantHeader(t, r, "Accept", "application/json")
			},
			answer: `{"type":"search","query":{"original":"go generics"},"web":{"type":"search","results":[
				{"title":"Tutorial: Getting started with <strong>generics</strong>","url":"https://go.dev/doc/tutorial/generics","description":"Introduces the basics of <strong>generics</strong> in Go &amp; more.","page_age":"2022-03-15T10:00:00","age":"March 15, 2022"},
				{"title":"Go 1.18 release","url":"https://go.dev/blog/go1.18","description":"Generics\nare here."}]}}`,
			want: []SearchResult{
				{Title: "Tutorial: Getting started with generics", URL: "https://go.dev/doc/tutorial/generics", Snippet: "Introduces the basics of generics in Go & more.", Published: ts("2022-03-15T10:00:00Z")},
				{Title: "Go 1.18 release", URL: "https://go.dev/blog/go1.18", Snippet: "Generics are here."},
			},
		},
		{
			typ: "exa", method: "POST", path: "/search", member: "base_url", key: header("x-api-key"),
			check: func(t *testing.T, r seen) {
				wantBody(t, r, map[string]any{"query": "go generics", "numResults": 3.0,
					"contents": map[string]any{"text": map[string]any{"maxCharacters": 1000.0}}})
			},
			answer: `{"requestId":"b5947044c4b78efa9552a7c89b306d95","resolvedSearchType":"neural","results":[
				{"id":"https://go.dev/doc/tutorial/generics","title":"Generics tutorial","url":"https://go.dev/doc/tutorial/generics","publishedDate":"2022-03-15T00:00:00.000Z","author":"The Go Team","score":0.41,"text":"This tutorial introduces generics."}]}`,
			want: []SearchResult{{Title: "Generics tutorial", URL: "https://go.dev/doc/tutorial/generics", Snippet: "This tutorial introduces generics.", Published: ts("2022-03-15T00:00:00Z")}},
		},
		{
			typ: "firecrawl", method: "POST", path: "/v1/search", member: "base_url", key: prefixed("Authorization", "Bearer "),
			check: func(t *testing.T, r seen) {
				wantBody(t, r, map[string]any{"query": "go generics", "limit": 3.0})
			},
			answer: `{"success":true,"data":[{"url":"https://go.dev/doc/tutorial/generics","title":"Generics tutorial","description":"Introduces generics."}],"warning":null}`,
			want:   []SearchResult{{Title: "Generics tutorial", URL: "https://go.dev/doc/tutorial/generics", Snippet: "Introduces generics."}},
		},
		{
			typ: "google_cse", method: "GET", base: "/customsearch/v1", path: "/customsearch/v1", member: "base_url",
			key: queryParam("key"), config: map[string]any{"search_engine_id": "017576662512468239146:omuauf_lfve"},
			check: func(t *testing.T, r seen) {
				wantQuery(t, r, map[string]string{"q": "go generics", "num": "3", "cx": "017576662512468239146:omuauf_lfve", "key": testKey})
			},
			answer: `{"kind":"customsearch#search","searchInformation":{"totalResults":"2"},"items":[
				{"kind":"customsearch#result","title":"Generics tutorial","htmlTitle":"<b>Generics</b> tutorial","link":"https://go.dev/doc/tutorial/generics","displayLink":"go.dev","snippet":"Introduces generics.","pagemap":{"metatags":[{"article:published_time":"2022-03-15T08:00:00+02:00"}]}},
				{"kind":"customsearch#result","title":"Spec","link":"https://go.dev/ref/spec","snippet":"The Go spec."}]}`,
			want: []SearchResult{
				{Title: "Generics tutorial", URL: "https://go.dev/doc/tutorial/generics", Snippet: "Introduces generics.", Published: ts("2022-03-15T06:00:00Z")},
				{Title: "Spec", URL: "https://go.dev/ref/spec", Snippet: "The Go spec."},
			},
		},
		{
			typ: "jina", method: "GET", path: "/", member: "search_url", key: prefixed("Authorization", "Bearer "),
			check: func(t *testing.T, r seen) {
				wantQuery(t, r, map[string]string{"q": "go generics", "num": "3"})
				wantHeader(t, r, "X-Respond-With", "no-content")
				wantHeader(t, r, "Accept", "application/json")
			},
			answer: `{"code":200,"status":20000,"data":[{"title":"Generics tutorial","url":"https://go.dev/doc/tutorial/generics","description":"Introduces generics.","date":"Mar 15, 2022","usage":{"tokens":1000}}],"meta":{"usage":{"tokens":10000}}}`,
			want:   []SearchResult{{Title: "Generics tutorial", URL: "https://go.dev/doc/tutorial/generics", Snippet: "Introduces generics.", Published: ts("2022-03-15T00:00:00Z")}},
		},
		{
			typ: "kagi", method: "GET", base: "/api/v0", path: "/api/v0/search", member: "base_url", key: prefixed("Authorization", "Bot "),
			check: func(t *testing.T, r seen) {
				wantQuery(t, r, map[string]string{"q": "go generics", "limit": "3"})
			},
			answer: `{"meta":{"id":"120145a6-b2b6-4d13-9b41-7e0d8b3f1a8b","node":"us-east","ms":151,"api_balance":9.97},"data":[
				{"t":0,"url":"https://go.dev/doc/tutorial/generics","title":"Generics tutorial","snippet":"Introduces <b>generics</b>.","published":"2022-03-15T00:00:00Z"},
				{"t":1,"list":["go generics constraints","go generics performance"]},
				{"t":0,"url":"https://go.dev/ref/spec","title":"Spec","snippet":"The spec."}]}`,
			want: []SearchResult{
				{Title: "Generics tutorial", URL: "https://go.dev/doc/tutorial/generics", Snippet: "Introduces generics.", Published: ts("2022-03-15T00:00:00Z")},
				{Title: "Spec", URL: "https://go.dev/ref/spec", Snippet: "The spec."},
			},
		},
		{
			typ: "searxng", method: "GET", path: "/search", member: "base_url",
			check: func(t *testing.T, r seen) {
				wantQuery(t, r, map[string]string{"q": "go generics", "format": "json"})
				wantHeader(t, r, "Authorization", "")
			},
			answer: `{"query":"go generics","number_of_results":0,"results":[
				{"url":"https://go.dev/doc/tutorial/generics","title":"Generics tutorial","content":"Introduces generics.","engine":"duckduckgo","publishedDate":null,"engines":["duckduckgo"],"score":1.0},
				{"url":"https://go.dev/ref/spec","title":"Spec","content":"The spec.","engine":"bing","publishedDate":"2024-02-01T00:00:00"},
				{"url":"https://example.org/a","title":"A","content":""},
				{"url":"https://example.org/b","title":"B","content":""}],"answers":[],"suggestions":[],"unresponsive_engines":[]}`,
			want: []SearchResult{
				{Title: "Generics tutorial", URL: "https://go.dev/doc/tutorial/generics", Snippet: "Introduces generics."},
				{Title: "Spec", URL: "https://go.dev/ref/spec", Snippet: "The spec.", Published: ts("2024-02-01T00:00:00Z")},
				{Title: "A", URL: "https://example.org/a"},
			},
		},
		{
			typ: "serpapi", method: "GET", path: "/search.json", member: "base_url", key: queryParam("api_key"),
			config: map[string]any{"engine": "bing"},
			check: func(t *testing.T, r seen) {
				wantQuery(t, r, map[string]string{"q": "go generics", "engine": "bing", "num": "3", "api_key": testKey})
			},
			answer: `{"search_metadata":{"id":"64f0","status":"Success"},"search_parameters":{"engine":"bing","q":"go generics"},"organic_results":[
				{"position":1,"title":"Generics tutorial","link":"https://go.dev/doc/tutorial/generics","snippet":"Introduces generics.","date":"Mar 15, 2022"}]}`,
			want: []SearchResult{{Title: "Generics tutorial", URL: "https://go.dev/doc/tutorial/generics", Snippet: "Introduces generics.", Published: ts("2022-03-15T00:00:00Z")}},
		},
		{
			typ: "serper", method: "POST", path: "/search", member: "base_url", key: header("X-API-KEY"),
			config: map[string]any{"gl": "fr", "hl": "fr"},
			check: func(t *testing.T, r seen) {
				wantBody(t, r, map[string]any{"q": "go generics", "num": 3.0, "gl": "fr", "hl": "fr"})
				wantHeader(t, r, "Content-Type", "application/json")
			},
			answer: `{"searchParameters":{"q":"go generics","type":"search","engine":"google"},"organic":[
				{"title":"Generics tutorial","link":"https://go.dev/doc/tutorial/generics","snippet":"Introduces generics.","date":"3 days ago","position":1}],"credits":1}`,
			want: []SearchResult{{Title: "Generics tutorial", URL: "https://go.dev/doc/tutorial/generics", Snippet: "Introduces generics."}},
		},
		{
			typ: "tavily", method: "POST", path: "/search", member: "base_url", key: prefixed("Authorization", "Bearer "),
			check: func(t *testing.T, r seen) {
				wantBody(t, r, map[string]any{"query": "go generics", "max_results": 3.0, "search_depth": "basic"})
			},
			answer: `{"query":"go generics","answer":null,"images":[],"results":[
				{"title":"Generics tutorial","url":"https://go.dev/doc/tutorial/generics","content":"Introduces generics.","score":0.81,"raw_content":null}],"response_time":1.67,"request_id":"123e4567-e89b-12d3-a456-426614174111"}`,
			want: []SearchResult{{Title: "Generics tutorial", URL: "https://go.dev/doc/tutorial/generics", Snippet: "Introduces generics."}},
		},
	}
}

// TestSearchVendors: each vendor receives its own request shape and auth,
// and its answer maps to the same results.
func TestSearchVendors(t *testing.T) {
	t.Parallel()
	for _, tc := range searchCases() {
		t.Run(tc.typ, func(t *testing.T) {
			t.Parallel()
			s := newStand(t, tc.method, tc.path, tc.key, ok(tc.answer))
			cfg := map[string]any{tc.member: s.srv.URL + tc.base}
			for k, v := range tc.config {
				cfg[k] = v
			}
			got, err := newTestClient(t, tc.typ, cfg).Search(context.Background(), SearchRequest{Query: "  go generics ", Count: 3})
			if err != nil {
				t.Fatalf("Search: %v", err)
			}
			r := s.only(t)
			tc.check(t, r)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("results:\n got %s\nwant %s", show(got), show(tc.want))
			}
		})
	}
}

// TestSearchWrongKey: every vendor's refusal of the key is "refused the
// credential", without the key or the vendor's words.
func TestSearchWrongKey(t *testing.T) {
	t.Parallel()
	for _, tc := range searchCases() {
		if tc.key == nil {
			continue
		}
		t.Run(tc.typ, func(t *testing.T) {
			t.Parallel()
			s := newStand(t, tc.method, tc.path, func(r *http.Request) string { return tc.key(r) + "-not-this-one" }, ok(tc.answer))
			cfg := map[string]any{tc.member: s.srv.URL + tc.base}
			for k, v := range tc.config {
				cfg[k] = v
			}
			c := newTestClient(t, tc.typ, cfg)
			_, err := c.Search(context.Background(), SearchRequest{Query: "q"})
			e := asError(t, err)
			if e.StatusCode != 401 || !contains(e.Message, "refused the credential (HTTP 401)") {
				t.Fatalf("error %+v", e)
			}
			noSecrets(t, err.Error())
			if n := len(s.requests()); n != 1 {
				t.Fatalf("a refused credential was retried: %d requests", n)
			}
		})
	}
}
