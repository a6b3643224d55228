package web

import (
	"context"
	"fmt"
	"net/http"
)

// exaSearch is POST {base_url}/search with the key in x-api-key, asking for a
// short text of each hit as its snippet.
func exaSearch(ctx context.Context, c *Client, q string, n int) ([]SearchResult, error) {
	body := map[string]any{
		"query":      q,
		"numResults": n,
		"contents":   map[string]any{"text": map[string]any{"maxCharacters": maxSnippetBytes}},
	}
	var out struct {
		Results []struct {
			Title         string `json:"title"`
			URL           string `json:"url"`
			PublishedDate string `json:"publishedDate"`
			Text          string `json:"text"`
		} `json:"results"`
	}
	r := request{method: http.MethodPost, url: c.endpoint("base_url", "/search", nil), header: c.exaAuth(), body: body}
	if err := c.call(ctx, r, &out, nil); err != nil {
		return nil, err
	}
	res := make([]SearchResult, 0, len(out.Results))
	for _, h := range out.Results {
		res = append(res, SearchResult{Title: h.Title, URL: h.URL, Snippet: h.Text, Published: parseDate(h.PublishedDate)})
	}
	return res, nil
}

// exaFetch is POST {base_url}/contents {"urls": [url], "text": true}. A page
// Exa could not fetch is a 200 answer whose statuses[] entry says "error"
// with the page's own HTTP status.
func exaFetch(ctx context.Context, c *Client, rawURL string) (Page, error) {
	body := map[string]any{"urls": []string{rawURL}, "text": true}
	var out struct {
		Results []struct {
			URL   string `json:"url"`
			Title string `json:"title"`
			Text  string `json:"text"`
		} `json:"results"`
		Statuses []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
			Error  *struct {
				Tag            string `json:"tag"`
				HTTPStatusCode int    `json:"httpStatusCode"`
			} `json:"error"`
		} `json:"statuses"`
	}
	r := request{method: http.MethodPost, url: c.endpoint("base_url", "/contents", nil), header: c.exaAuth(), body: body}
	if err := c.call(ctx, r, &out, nil); err != nil {
		return Page{}, err
	}
	for _, s := range out.Statuses {
		if s.Status != "error" {
			continue
		}
		e := &Error{Message: "Exa could not fetch the page"}
		if s.Error != nil {
			switch s.Error.Tag {
			case "CRAWL_NOT_FOUND":
				e.Message = "Exa could not fetch the page: it was not found"
			case "CRAWL_TIMEOUT":
				e.Message, e.Retryable = "Exa could not fetch the page: it did not answer in time", true
			case "SOURCE_NOT_AVAILABLE":
				e.Message = "Exa could not fetch the page: the source is not available"
			}
			if s.Error.HTTPStatusCode != 0 {
				e.Message += fmt.Sprintf(" (page status %d)", s.Error.HTTPStatusCode)
			}
		}
		return Page{}, e
	}
	if len(out.Results) == 0 {
		return Page{}, &Error{Message: "Exa returned no content for the page"}
	}
	p := out.Results[0]
	return Page{URL: p.URL, Title: p.Title, Content: p.Text}, nil
}

func (c *Client) exaAuth() map[string]string { return map[string]string{"x-api-key": c.key} }
