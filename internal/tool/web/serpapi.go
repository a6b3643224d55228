package web

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// serpapiSearch is GET {base_url}/search.json?engine=&q=&num=&api_key= (the
// key travels in the query string); hits are organic_results[]. SerpApi
// answers 200 with an "error" member when the engine found nothing.
func serpapiSearch(ctx context.Context, c *Client, q string, n int) ([]SearchResult, error) {
	params := url.Values{"engine": {c.config["engine"]}, "q": {q}, "num": {strconv.Itoa(n)}, "api_key": {c.key}}
	var out struct {
		Error          string `json:"error"`
		OrganicResults []struct {
			Title   string `json:"title"`
			Link    string `json:"link"`
			Snippet string `json:"snippet"`
			Date    string `json:"date"`
		} `json:"organic_results"`
	}
	r := request{method: http.MethodGet, url: c.endpoint("base_url", "/search.json", params)}
	if err := c.call(ctx, r, &out, nil); err != nil {
		return nil, err
	}
	if out.Error != "" && len(out.OrganicResults) == 0 && !strings.Contains(out.Error, "hasn't returned any results") {
		return nil, &Error{Message: "SerpApi reported that the search failed"}
	}
	res := make([]SearchResult, 0, len(out.OrganicResults))
	for _, h := range out.OrganicResults {
		res = append(res, SearchResult{Title: h.Title, URL: h.Link, Snippet: h.Snippet, Published: parseDate(h.Date)})
	}
	return res, nil
}
