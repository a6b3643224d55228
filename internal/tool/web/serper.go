package web

import (
	"context"
	"net/http"
)

// serperSearch is POST {base_url}/search {"q", "num"[, "gl", "hl"]} with the
// key in X-API-KEY; hits are organic[].
func serperSearch(ctx context.Context, c *Client, q string, n int) ([]SearchResult, error) {
	body := map[string]any{"q": q, "num": n}
	for _, k := range []string{"gl", "hl"} {
		if v := c.config[k]; v != "" {
			body[k] = v
		}
	}
	var out struct {
		Organic []struct {
			Title   string `json:"title"`
			Link    string `json:"link"`
			Snippet string `json:"snippet"`
			Date    string `json:"date"`
		} `json:"organic"`
	}
	r := request{method: http.MethodPost, url: c.endpoint("base_url", "/search", nil), header: map[string]string{"X-API-KEY": c.key}, body: body}
	if err := c.call(ctx, r, &out, nil); err != nil {
		return nil, err
	}
	res := make([]SearchResult, 0, len(out.Organic))
	for _, h := range out.Organic {
		res = append(res, SearchResult{Title: h.Title, URL: h.Link, Snippet: h.Snippet, Published: parseDate(h.Date)})
	}
	return res, nil
}
