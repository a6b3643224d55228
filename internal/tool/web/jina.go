package web

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// jinaSearch is GET {search_url}/?q=&num= with a bearer key, Accept:
// application/json and X-Respond-With: no-content, which returns the result
// page without fetching every hit: data[] of {title, url, description, date}.
func jinaSearch(ctx context.Context, c *Client, q string, n int) ([]SearchResult, error) {
	var out struct {
		Data []struct {
			Title         string `json:"title"`
			URL           string `json:"url"`
			Description   string `json:"description"`
			Date          string `json:"date"`
			PublishedTime string `json:"publishedTime"`
		} `json:"data"`
	}
	h := c.bearer()
	h["X-Respond-With"] = "no-content"
	r := request{method: http.MethodGet, url: c.endpoint("search_url", "/", url.Values{"q": {q}, "num": {strconv.Itoa(n)}}), header: h}
	if err := c.call(ctx, r, &out, jinaStatus); err != nil {
		return nil, err
	}
	res := make([]SearchResult, 0, len(out.Data))
	for _, d := range out.Data {
		p := parseDate(d.PublishedTime)
		if p == nil {
			p = parseDate(d.Date)
		}
		res = append(res, SearchResult{Title: d.Title, URL: d.URL, Snippet: d.Description, Published: p})
	}
	return res, nil
}

// jinaFetch is POST {reader_url}/ {"url"} with a bearer key and Accept:
// application/json (the POST form keeps a URL's own query and fragment
// intact); the page is data.{title, url, content} in markdown.
func jinaFetch(ctx context.Context, c *Client, rawURL string) (Page, error) {
	var out struct {
		Data struct {
			Title   string `json:"title"`
			URL     string `json:"url"`
			Content string `json:"content"`
		} `json:"data"`
	}
	r := request{method: http.MethodPost, url: c.endpoint("reader_url", "/", nil), header: c.bearer(), body: map[string]string{"url": rawURL}}
	if err := c.call(ctx, r, &out, jinaStatus); err != nil {
		return Page{}, err
	}
	return Page{URL: out.Data.URL, Title: out.Data.Title, Content: out.Data.Content}, nil
}

// jinaStatus: Jina answers 422 when it could not load the page or run the
// search, and 402 when the key's balance is spent.
func jinaStatus(code int, _ []byte) string {
	if code == http.StatusUnprocessableEntity {
		return "Jina AI could not load the page or run the search (HTTP 422)"
	}
	return ""
}
