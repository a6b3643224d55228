package web

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"
)

const pageURL = "https://go.dev/doc/tutorial/generics?lang=en#intro"

// fetchCase is one vendor's fetch protocol.
type fetchCase struct {
	typ        string
	path       string
	member     string
	key        func(*http.Request) string
	check      func(t *testing.T, r seen)
	answer     func(content string) string
	want       Page // Content is filled in by the test
	wantHeader map[string]string
}

func fetchCases() []fetchCase {
	return []fetchCase{
		{
			typ: "exa", path: "/contents", member: "base_url", key: header("x-api-key"),
			check: func(t *testing.T, r seen) {
				wantBody(t, r, map[string]any{"urls": []any{pageURL}, "text": true})
			},
			answer: func(c string) string {
				return `{"requestId":"e492118ccdedcba5088bfc4357a8a125","results":[{"id":"` + pageURL + `","url":"https://go.dev/doc/tutorial/generics","title":"Tutorial: Getting started with generics","text":` + c + `}],"statuses":[{"id":"` + pageURL + `","status":"success"}]}`
			},
			want: Page{URL: "https://go.dev/doc/tutorial/generics", Title: "Tutorial: Getting started with generics"},
		},
		{
			typ: "firecrawl", path: "/v1/scrape", member: "base_url", key: prefixed("Authorization", "Bearer "),
			check: func(t *testing.T, r seen) {
				wantBody(t, r, map[string]any{"url": pageURL, "formats": []any{"markdown"}, "onlyMainContent": true})
			},
			answer: func(c string) string {
				return `{"success":true,"data":{"markdown":` + c + `,"metadata":{"title":"Tutorial: Getting started with generics","language":"en","sourceURL":"` + pageURL + `","url":"https://go.dev/doc/tutorial/generics","statusCode":200}}}`
			},
			want: Page{URL: "https://go.dev/doc/tutorial/generics", Title: "Tutorial: Getting started with generics"},
		},
		{
			typ: "jina", path: "/", member: "reader_url", key: prefixed("Authorization", "Bearer "),
			check: func(t *testing.T, r seen) {
				wantBody(t, r, map[string]any{"url": pageURL})
				wantHeader(t, r, "Accept", "application/json")
			},
			answer: func(c string) string {
				return `{"code":200,"status":20000,"data":{"title":"Tutorial: Getting started with generics","description":"","url":"https://go.dev/doc/tutorial/generics","content":` + c + `,"usage":{"tokens":2000}}}`
			},
			want: Page{URL: "https://go.dev/doc/tutorial/generics", Title: "Tutorial: Getting started with generics"},
		},
		{
			typ: "tavily", path: "/extract", member: "base_url", key: prefixed("Authorization", "Bearer "),
			check: func(t *testing.T, r seen) {
				wantBody(t, r, map[string]any{"urls": []any{pageURL}, "format": "markdown"})
			},
			answer: func(c string) string {
				return `{"results":[{"url":"` + pageURL + `","raw_content":` + c + `,"images":[]}],"failed_results":[],"response_time":0.02,"request_id":"123e4567-e89b-12d3-a456-426614174111"}`
			},
			want: Page{URL: pageURL},
		},
	}
}

// TestFetchVendors: each fetch vendor gets the URL in its own request shape;
// the page maps to URL, title and content; long content is cut to
// MaxContentBytes on a rune boundary.
func TestFetchVendors(t *testing.T) {
	t.Parallel()
	for _, tc := range fetchCases() {
		t.Run(tc.typ, func(t *testing.T) {
			t.Parallel()
			content := "# Generics\n\nWith **generics**, you can declare and use functions or types."
			s := newStand(t, "POST", tc.path, tc.key, ok(tc.answer(quote(content))))
			c := newTestClient(t, tc.typ, map[string]any{tc.member: s.srv.URL})
			p, err := c.Fetch(context.Background(), pageURL)
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			tc.check(t, s.only(t))
			want := tc.want
			want.Content = content
			if p != want {
				t.Fatalf("page %+v, want %+v", p, want)
			}
		})
		t.Run(tc.typ+"/truncated", func(t *testing.T) {
			t.Parallel()
			long := strings.Repeat("ж€", 40<<10) // 5 bytes a pair: 200 KiB
			s := newStand(t, "POST", tc.path, tc.key, ok(tc.answer(quote(long))))
			p, err := newTestClient(t, tc.typ, map[string]any{tc.member: s.srv.URL}).Fetch(context.Background(), pageURL)
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			if !p.Truncated || len(p.Content) > MaxContentBytes || len(p.Content) < MaxContentBytes-4 ||
				!utf8.ValidString(p.Content) || !strings.HasPrefix(long, p.Content) {
				t.Fatalf("truncated=%v, %d bytes, valid=%v", p.Truncated, len(p.Content), utf8.ValidString(p.Content))
			}
		})
		t.Run(tc.typ+"/wrong key", func(t *testing.T) {
			t.Parallel()
			s := newStand(t, "POST", tc.path, func(*http.Request) string { return "other" }, ok("{}"))
			_, err := newTestClient(t, tc.typ, map[string]any{tc.member: s.srv.URL}).Fetch(context.Background(), pageURL)
			e := asError(t, err)
			if e.StatusCode != 401 || !contains(e.Message, "refused the credential (HTTP 401)") {
				t.Fatalf("error %+v", e)
			}
			noSecrets(t, err.Error())
		})
	}
}

// TestFetchPageFailures: vendors report a page they could not get inside a
// 200 answer; each is a failure naming the cause in our words.
func TestFetchPageFailures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		typ, path, member, answer, want string
	}{
		{"exa", "/contents", "base_url",
			`{"results":[],"statuses":[{"id":"` + pageURL + `","status":"error","error":{"tag":"CRAWL_NOT_FOUND","httpStatusCode":404}}]}`,
			"Exa could not fetch the page: it was not found (page status 404)"},
		{"tavily", "/extract", "base_url",
			`{"results":[],"failed_results":[{"url":"` + pageURL + `","error":"` + vendorBody + `"}],"response_time":0.5}`,
			"Tavily could not extract the page"},
		{"firecrawl", "/v1/scrape", "base_url",
			`{"success":true,"data":{"markdown":"Not found","metadata":{"title":"404","sourceURL":"` + pageURL + `","statusCode":404,"error":"` + vendorBody + `"}}}`,
			"the page answered HTTP 404 to Firecrawl"},
	}
	for _, tc := range cases {
		t.Run(tc.typ, func(t *testing.T) {
			t.Parallel()
			s := newStand(t, "POST", tc.path, nil, ok(tc.answer))
			_, err := newTestClient(t, tc.typ, map[string]any{tc.member: s.srv.URL}).Fetch(context.Background(), pageURL)
			if e := asError(t, err); e.Message != tc.want {
				t.Fatalf("message %q, want %q", e.Message, tc.want)
			}
			noSecrets(t, err.Error())
		})
	}
}

func quote(s string) string { return show(s) }
