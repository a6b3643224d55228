package web

import (
	"context"
	"fmt"
	"net/http"
)

// tavilySearch is POST {base_url}/search {"query", "max_results",
// "search_depth": "basic"} with a bearer key; hits are results[] whose
// content is the snippet.
func tavilySearch(ctx context.Context, c *Client, q string, n int) ([]SearchResult, error) {
	body := map[string]any{"query": q, "max_results": n, "search_depth": "basic"}
	var out struct {
		Results []struct {
			Title         string `json:"title"`
			URL           string `json:"url"`
			Content       string `json:"content"`
			PublishedDate string `json:"published_date"`
		} `json:"results"`
	}
	r := request{method: http.MethodPost, url: c.endpoint("base_url", "/search", nil), header: c.bearer(), body: body}
	if err := c.call(ctx, r, &out, tavilyStatus); err != nil {
		return nil, err
	}
	res := make([]SearchResult, 0, len(out.Results))
	for _, h := range out.Results {
		res = append(res, SearchResult{Title: h.Title, URL: h.URL, Snippet: h.Content, Published: parseDate(h.PublishedDate)})
	}
	return res, nil
}

// tavilyFetch is POST {base_url}/extract {"urls": [url], "format":
// "markdown"}; a page Tavily could not extract is listed in failed_results
// of a 200 answer.
func tavilyFetch(ctx context.Context, c *Client, rawURL string) (Page, error) {
	body := map[string]any{"urls": []string{rawURL}, "format": "markdown"}
	var out struct {
		Results []struct {
			URL        string `json:"url"`
			RawContent string `json:"raw_content"`
		} `json:"results"`
		FailedResults []struct {
			URL string `json:"url"`
		} `json:"failed_results"`
	}
	r := request{method: http.MethodPost, url: c.endpoint("base_url", "/extract", nil), header: c.bearer(), body: body}
	if err := c.call(ctx, r, &out, tavilyStatus); err != nil {
		return Page{}, err
	}
	if len(out.Results) == 0 {
		if len(out.FailedResults) > 0 {
			return Page{}, &Error{Message: "Tavily could not extract the page"}
		}
		return Page{}, &Error{Message: "Tavily returned no content for the page"}
	}
	p := out.Results[0]
	return Page{URL: p.URL, Content: p.RawContent}, nil
}

// tavilyStatus names Tavily's own statuses: 432 (plan or key limit) and 433
// (pay-as-you-go limit).
func tavilyStatus(code int, _ []byte) string {
	if code == 432 || code == 433 {
		return fmt.Sprintf("Tavily refused the request: the account's usage limit is reached (HTTP %d)", code)
	}
	return ""
}
