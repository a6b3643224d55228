package web

import (
	"context"
	"net/url"
	"strings"
)

// vendor is how one provider type serves the operations it declares.
type vendor struct {
	// required are config members the type needs without a default.
	required []string
	search   func(ctx context.Context, c *Client, query string, n int) ([]SearchResult, error)
	fetch    func(ctx context.Context, c *Client, rawURL string) (Page, error)
}

// vendors maps each web provider type to its vendor calls; one file per vendor.
var vendors = map[string]vendor{
	"brave":      {search: braveSearch},
	"exa":        {search: exaSearch, fetch: exaFetch},
	"firecrawl":  {search: firecrawlSearch, fetch: firecrawlFetch},
	"google_cse": {required: []string{"search_engine_id"}, search: googleSearch},
	"jina":       {search: jinaSearch, fetch: jinaFetch},
	"kagi":       {search: kagiSearch},
	"searxng":    {required: []string{"base_url"}, search: searxngSearch},
	"serpapi":    {search: serpapiSearch},
	"serper":     {search: serperSearch},
	"tavily":     {search: tavilySearch, fetch: tavilyFetch},
}

// endpoint is the config member's URL (a base URL) followed by path and,
// when q is not empty, a query string.
func (c *Client) endpoint(member, path string, q url.Values) string {
	u := strings.TrimSuffix(c.config[member], "/") + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// bearer is the Authorization header of the vendors that take a bearer key.
func (c *Client) bearer() map[string]string {
	return map[string]string{"Authorization": "Bearer " + c.key}
}
