package web

import (
	"context"
	"net/http"
	"net/url"
)

// searxngSearch is GET {base_url}/search?q=&format=json; the instance picks
// the number of hits (there is no count parameter) and Search keeps the first
// n. An instance whose settings leave json out of search.formats answers 403.
func searxngSearch(ctx context.Context, c *Client, q string, _ int) ([]SearchResult, error) {
	var out struct {
		Results []struct {
			URL           string `json:"url"`
			Title         string `json:"title"`
			Content       string `json:"content"`
			PublishedDate string `json:"publishedDate"`
		} `json:"results"`
	}
	// SearXNG takes no credential (its credential schema is empty).
	r := request{method: http.MethodGet, url: c.endpoint("base_url", "/search", url.Values{"q": {q}, "format": {"json"}})}
	if err := c.call(ctx, r, &out, searxngStatus); err != nil {
		return nil, err
	}
	res := make([]SearchResult, 0, len(out.Results))
	for _, h := range out.Results {
		res = append(res, SearchResult{Title: h.Title, URL: h.URL, Snippet: stripHTML(h.Content), Published: parseDate(h.PublishedDate)})
	}
	return res, nil
}

func searxngStatus(code int, _ []byte) string {
	if code == http.StatusForbidden {
		return "SearXNG refused the request (HTTP 403); the instance must enable the json format (search.formats)"
	}
	return ""
}
