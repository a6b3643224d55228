package web

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// braveSearch is GET {base_url}/web/search?q=&count=[&country=] with the key
// in X-Subscription-Token; hits are web.results[] whose title and description
// carry <strong> markup, and page_age is an ISO date without a zone.
func braveSearch(ctx context.Context, c *Client, q string, n int) ([]SearchResult, error) {
	params := url.Values{"q": {q}, "count": {strconv.Itoa(n)}}
	if cc := c.config["country"]; cc != "" {
		params.Set("country", strings.ToUpper(cc))
	}
	var out struct {
		Web struct {
			Results []struct {
				Title       string `json:"title"`
				URL         string `json:"url"`
				Description string `json:"description"`
				PageAge     string `json:"page_age"`
			} `json:"results"`
		} `json:"web"`
	}
	r := request{method: http.MethodGet, url: c.endpoint("base_url", "/web/search", params),
		header: map[string]string{"X-Subscription-Token": c.key}}
	if err := c.call(ctx, r, &out, nil); err != nil {
		return nil, err
	}
	res := make([]SearchResult, 0, len(out.Web.Results))
	for _, h := range out.Web.Results {
		res = append(res, SearchResult{Title: stripHTML(h.Title), URL: h.URL, Snippet: stripHTML(h.Description), Published: parseDate(h.PageAge)})
	}
	return res, nil
}
