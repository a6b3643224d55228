package web

import (
	"context"
	"fmt"
	"net/http"
)

// firecrawlMaxLimit is the largest limit Firecrawl's v1 search takes.
const firecrawlMaxLimit = 10

// firecrawlSearch is POST {base_url}/v1/search {"query", "limit"} with a
// bearer key; without scrapeOptions it returns the result page only (no
// per-hit scrape cost): data[] of {url, title, description}.
func firecrawlSearch(ctx context.Context, c *Client, q string, n int) ([]SearchResult, error) {
	body := map[string]any{"query": q, "limit": min(n, firecrawlMaxLimit)}
	var out struct {
		Success bool `json:"success"`
		Data    []struct {
			URL         string `json:"url"`
			Title       string `json:"title"`
			Description string `json:"description"`
		} `json:"data"`
	}
	r := request{method: http.MethodPost, url: c.endpoint("base_url", "/v1/search", nil), header: c.bearer(), body: body}
	if err := c.call(ctx, r, &out, firecrawlStatus); err != nil {
		return nil, err
	}
	if !out.Success {
		return nil, &Error{Message: "Firecrawl reported that the search failed"}
	}
	res := make([]SearchResult, 0, len(out.Data))
	for _, h := range out.Data {
		res = append(res, SearchResult{Title: h.Title, URL: h.URL, Snippet: h.Description})
	}
	return res, nil
}

// firecrawlFetch is POST {base_url}/v1/scrape {"url", "formats": ["markdown"],
// "onlyMainContent": true}; data.metadata carries the title, the final URL and
// the page's own status code.
func firecrawlFetch(ctx context.Context, c *Client, rawURL string) (Page, error) {
	body := map[string]any{"url": rawURL, "formats": []string{"markdown"}, "onlyMainContent": true}
	var out struct {
		Success bool `json:"success"`
		Data    struct {
			Markdown string `json:"markdown"`
			Metadata struct {
				Title      string `json:"title"`
				SourceURL  string `json:"sourceURL"`
				URL        string `json:"url"`
				StatusCode int    `json:"statusCode"`
			} `json:"metadata"`
		} `json:"data"`
	}
	r := request{method: http.MethodPost, url: c.endpoint("base_url", "/v1/scrape", nil), header: c.bearer(), body: body}
	if err := c.call(ctx, r, &out, firecrawlStatus); err != nil {
		return Page{}, err
	}
	if !out.Success {
		return Page{}, &Error{Message: "Firecrawl reported that the scrape failed"}
	}
	m := out.Data.Metadata
	if m.StatusCode >= 400 {
		return Page{}, &Error{Message: fmt.Sprintf("the page answered HTTP %d to Firecrawl", m.StatusCode)}
	}
	u := m.URL
	if u == "" {
		u = m.SourceURL
	}
	return Page{URL: u, Title: m.Title, Content: out.Data.Markdown}, nil
}

// firecrawlStatus names Firecrawl's own error statuses: 408 is its scrape
// time-out.
func firecrawlStatus(code int, _ []byte) string {
	if code == http.StatusRequestTimeout {
		return "Firecrawl could not fetch the page in time (HTTP 408)"
	}
	return ""
}
