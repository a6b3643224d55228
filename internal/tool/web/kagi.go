package web

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// kagiSearch is GET {base_url}/search?q=&limit= with Authorization: Bot
// <token>; data[] mixes hits (t 0) with related searches (t 1).
func kagiSearch(ctx context.Context, c *Client, q string, n int) ([]SearchResult, error) {
	var out struct {
		Data []struct {
			T         int    `json:"t"`
			URL       string `json:"url"`
			Title     string `json:"title"`
			Snippet   string `json:"snippet"`
			Published string `json:"published"`
		} `json:"data"`
	}
	r := request{method: http.MethodGet, url: c.endpoint("base_url", "/search", url.Values{"q": {q}, "limit": {strconv.Itoa(n)}}),
		header: map[string]string{"Authorization": "Bot " + c.key}}
	if err := c.call(ctx, r, &out, nil); err != nil {
		return nil, err
	}
	res := make([]SearchResult, 0, len(out.Data))
	for _, d := range out.Data {
		if d.T == 0 {
			res = append(res, SearchResult{Title: d.Title, URL: d.URL, Snippet: stripHTML(d.Snippet), Published: parseDate(d.Published)})
		}
	}
	return res, nil
}
