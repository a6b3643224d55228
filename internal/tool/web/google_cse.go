package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
)

// googleMaxNum is the largest num the Custom Search JSON API takes.
const googleMaxNum = 10

// googleSearch is GET {base_url}?key=&cx=&q=&num= (the key travels in the
// query string, so the URL never appears in an error); hits are items[].
func googleSearch(ctx context.Context, c *Client, q string, n int) ([]SearchResult, error) {
	params := url.Values{
		"key": {c.key}, "cx": {c.config["search_engine_id"]},
		"q": {q}, "num": {strconv.Itoa(min(n, googleMaxNum))},
	}
	var out struct {
		Items []struct {
			Title   string `json:"title"`
			Link    string `json:"link"`
			Snippet string `json:"snippet"`
			Pagemap struct {
				Metatags []map[string]any `json:"metatags"`
			} `json:"pagemap"`
		} `json:"items"`
	}
	r := request{method: http.MethodGet, url: c.endpoint("base_url", "", params)}
	if err := c.call(ctx, r, &out, googleStatus); err != nil {
		return nil, err
	}
	res := make([]SearchResult, 0, len(out.Items))
	for _, h := range out.Items {
		var published string
		if len(h.Pagemap.Metatags) > 0 {
			published, _ = h.Pagemap.Metatags[0]["article:published_time"].(string)
		}
		res = append(res, SearchResult{Title: h.Title, URL: h.Link, Snippet: h.Snippet, Published: parseDate(published)})
	}
	return res, nil
}

// googleStatus recognises Google's answer to a wrong key, a 400 whose error
// carries the reason keyInvalid (or API_KEY_INVALID in details).
func googleStatus(code int, body []byte) string {
	if code != http.StatusBadRequest {
		return ""
	}
	var e struct {
		Error struct {
			Errors []struct {
				Reason string `json:"reason"`
			} `json:"errors"`
			Details []struct {
				Reason string `json:"reason"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	for _, x := range e.Error.Errors {
		if x.Reason == "keyInvalid" {
			return "Google Custom Search refused the credential (HTTP 400)"
		}
	}
	for _, x := range e.Error.Details {
		if x.Reason == "API_KEY_INVALID" {
			return "Google Custom Search refused the credential (HTTP 400)"
		}
	}
	return ""
}
