package web

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/endpoint"
)

const braveAnswer = `{"web":{"results":[{"title":"T","url":"https://example.org/","description":"D"}]}}`

func braveStand(t *testing.T, answers ...answer) (*stand, *Client) {
	t.Helper()
	s := newStand(t, "GET", "/web/search", header("X-Subscription-Token"), answers...)
	return s, newTestClient(t, "brave", map[string]any{"base_url": s.srv.URL})
}

// TestRetry: a 429 or 5xx is retried once, after a short Retry-After when
// the vendor sends one; a long Retry-After is not waited for; other
// statuses are not retried. Messages are ours.
func TestRetry(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		answers  []answer
		requests int
		want     string // "" for success
		minWait  time.Duration
	}{
		{"429 then ok", []answer{{status: 429, body: vendorBody}, ok(braveAnswer)}, 2, "", 0},
		{"503 then ok", []answer{{status: 503}, ok(braveAnswer)}, 2, "", 0},
		{"short Retry-After honoured", []answer{{status: 429, header: map[string]string{"Retry-After": "1"}}, ok(braveAnswer)}, 2, "", time.Second},
		{"503 twice", []answer{{status: 503, body: `{"error":"` + vendorBody + `"}`}}, 2,
			"Brave Search is unavailable (HTTP 503); try again later", 0},
		{"429 twice", []answer{{status: 429}}, 2, "Brave Search rate limited the request (HTTP 429); try again later", 0},
		{"long Retry-After", []answer{{status: 429, header: map[string]string{"Retry-After": "120"}}, ok(braveAnswer)}, 1,
			"Brave Search rate limited the request (HTTP 429); try again later", 0},
		{"422 not retried", []answer{{status: 422, body: `{"error":{"detail":"` + vendorBody + `"}}`}}, 1, "Brave Search rejected the request (HTTP 422)", 0},
		{"402", []answer{{status: 402}}, 1, "Brave Search refused the request: the account's credits or plan are exhausted (HTTP 402)", 0},
		{"403", []answer{{status: 403}}, 1, "Brave Search refused the credential (HTTP 403)", 0},
		{"not JSON", []answer{ok("<html>" + vendorBody)}, 1, "Brave Search answered with something other than its JSON", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, c := braveStand(t, tc.answers...)
			start := time.Now()
			res, err := c.Search(context.Background(), SearchRequest{Query: "q"})
			if n := len(s.requests()); n != tc.requests {
				t.Fatalf("%d requests, want %d", n, tc.requests)
			}
			if tc.want == "" {
				if err != nil || len(res) != 1 {
					t.Fatalf("got %v, %v", res, err)
				}
				if el := time.Since(start); el < tc.minWait {
					t.Fatalf("retried after %v, before the vendor's Retry-After %v", el, tc.minWait)
				}
				return
			}
			if e := asError(t, err); e.Message != tc.want {
				t.Fatalf("message %q, want %q", e.Message, tc.want)
			}
			noSecrets(t, err.Error())
		})
	}
}

// TestNetworkErrorsHideURL: a vendor that takes the key in the query string
// (Google) cannot be reached; the error names the vendor, not the URL.
func TestNetworkErrorsHideURL(t *testing.T) {
	t.Parallel()
	s := newStand(t, "GET", "/", nil, ok("{}"))
	s.srv.Close()
	c := newTestClient(t, "google_cse", map[string]any{"base_url": s.srv.URL, "search_engine_id": "cx"})
	_, err := c.Search(context.Background(), SearchRequest{Query: "q"})
	e := asError(t, err)
	if e.Message != "could not reach Google Custom Search" || !e.Retryable {
		t.Fatalf("error %+v", e)
	}
	noSecrets(t, err.Error())
}

// TestEndpointPolicy: calls go through the given client; a policy that
// refuses loopback refuses the call, and the error says so.
func TestEndpointPolicy(t *testing.T) {
	t.Parallel()
	s, c := braveStand(t, ok(braveAnswer))
	u, _ := url.Parse(s.srv.URL)
	port, _ := strconv.Atoi(u.Port())
	allow, err := endpoint.NewPolicy(config.EndpointPolicy{AllowHTTP: true, AllowedPrefixes: []string{"127.0.0.0/8"}, AllowedPorts: []int{port}})
	if err != nil {
		t.Fatal(err)
	}
	c.http = allow.HTTPClient(0)
	if res, err := c.Search(context.Background(), SearchRequest{Query: "q"}); err != nil || len(res) != 1 {
		t.Fatalf("through an allowing policy: %v, %v", res, err)
	}
	strict, err := endpoint.NewPolicy(config.EndpointPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	c.http = strict.HTTPClient(0)
	_, err = c.Search(context.Background(), SearchRequest{Query: "q"})
	if !errors.Is(err, endpoint.ErrRefused) || len(s.requests()) != 1 {
		t.Fatalf("through a strict policy: %v after %d requests", err, len(s.requests()))
	}
	noSecrets(t, err.Error())
}

// TestCancelled: the caller's cancellation is returned as such, also while
// waiting to retry.
func TestCancelled(t *testing.T) {
	t.Parallel()
	_, c := braveStand(t, answer{status: 429, header: map[string]string{"Retry-After": "3"}})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.Search(ctx, SearchRequest{Query: "q"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want the context's", err)
	}
}

// TestCount: 0 asks for DefaultCount, more than MaxCount asks for MaxCount,
// and vendors with a smaller maximum get theirs; extra hits are dropped.
func TestCount(t *testing.T) {
	t.Parallel()
	cases := []struct{ count, sent int }{{0, 5}, {1, 1}, {20, 20}, {50, 20}}
	for _, tc := range cases {
		s, c := braveStand(t, ok(`{"web":{"results":[{"url":"https://a/"},{"url":"https://b/"},{"url":""},{"url":"https://c/"}]}}`))
		res, err := c.Search(context.Background(), SearchRequest{Query: "q", Count: tc.count})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.only(t).Query.Get("count"); got != strconv.Itoa(tc.sent) {
			t.Errorf("count %d sent %s, want %d", tc.count, got, tc.sent)
		}
		if want := min(tc.sent, 3); len(res) != want {
			t.Errorf("count %d: %d results, want %d (hits without a URL dropped)", tc.count, len(res), want)
		}
	}
	g := newStand(t, "GET", "/", queryParam("key"), ok(`{"items":[]}`))
	c := newTestClient(t, "google_cse", map[string]any{"base_url": g.srv.URL, "search_engine_id": "cx"})
	if _, err := c.Search(context.Background(), SearchRequest{Query: "q", Count: 20}); err != nil {
		t.Fatal(err)
	}
	if got := g.only(t).Query.Get("num"); got != "10" {
		t.Errorf("google num %s, want 10", got)
	}
}

// TestVendorStatuses: statuses that mean something particular for one vendor
// get their own words.
func TestVendorStatuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		typ, path, member string
		extra             map[string]any
		status            int
		body, want        string
	}{
		{"google_cse", "/", "base_url", map[string]any{"search_engine_id": "cx"}, 400,
			`{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","errors":[{"message":"API key not valid.","domain":"global","reason":"badRequest"}],"status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}`,
			"Google Custom Search refused the credential (HTTP 400)"},
		{"google_cse", "/", "base_url", map[string]any{"search_engine_id": "cx"}, 400,
			`{"error":{"code":400,"message":"Invalid Value","errors":[{"message":"Invalid Value","domain":"global","reason":"invalid"}],"status":"INVALID_ARGUMENT"}}`,
			"Google Custom Search rejected the request (HTTP 400)"},
		{"tavily", "/search", "base_url", nil, 432, `{"detail":{"error":"` + vendorBody + `"}}`,
			"Tavily refused the request: the account's usage limit is reached (HTTP 432)"},
		{"searxng", "/search", "base_url", nil, 403, `<html>403 Forbidden</html>`,
			"SearXNG refused the request (HTTP 403); the instance must enable the json format (search.formats)"},
		{"searxng", "/search", "base_url", nil, 401, ``,
			"SearXNG refused the request (HTTP 401); it may require access settings svc cannot send"},
		{"jina", "/", "search_url", nil, 422, `{"code":422,"name":"AssertionFailureError","status":42206,"message":"` + vendorBody + `"}`,
			"Jina AI could not load the page or run the search (HTTP 422)"},
	}
	for _, tc := range cases {
		s := newStand(t, "GET", tc.path, nil, answer{status: tc.status, body: tc.body})
		cfg := map[string]any{tc.member: s.srv.URL}
		for k, v := range tc.extra {
			cfg[k] = v
		}
		if tc.typ == "tavily" {
			s.method = "POST"
		}
		_, err := newTestClient(t, tc.typ, cfg).Search(context.Background(), SearchRequest{Query: "q"})
		if e := asError(t, err); e.Message != tc.want || e.StatusCode != tc.status {
			t.Errorf("%s %d: %+v, want %q", tc.typ, tc.status, e, tc.want)
		}
		noSecrets(t, err.Error())
	}
}
