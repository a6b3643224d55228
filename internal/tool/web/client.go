// Package web is the web toolset: web search and page fetch through an
// agent's web provider (brave, exa, firecrawl, google_cse, jina, kagi,
// searxng, serpapi, serper, tavily). A Client speaks one provider's vendor
// API; Tools turns it into the web_search and web_fetch tools the agent loop
// offers to the model; Toolset.ForRun builds them for a run from its
// agent's web provider (package provider opens it).
//
// svc never fetches a page itself: web_fetch sends the URL to the vendor
// (Jina Reader, Firecrawl scrape, Exa contents, Tavily extract), which
// fetches it. Every request goes through the HTTP client given in Provider,
// the endpoint policy's guarded client.
//
// Errors never carry the credential, a request URL (two vendors take the key
// in the query string) or any part of a vendor's answer: an *Error's message
// is our own words with the HTTP status.
package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/svcdev/svc/internal/provider/catalog"
)

// Provider is what a Client needs of a web provider.
type Provider struct {
	// Type is the provider type id (catalog.KindWeb).
	Type string
	// Config is the provider's config object; members it leaves out take
	// their schema defaults. nil is the empty object.
	Config json.RawMessage
	// Credential is the decrypted credential object, nil when none is stored.
	Credential json.RawMessage
	// HTTPClient sends every request: the endpoint policy's guarded client.
	// Nil uses http.DefaultClient (tests only).
	HTTPClient *http.Client
}

// SearchRequest is one web search.
type SearchRequest struct {
	Query string
	// Count is the number of results wanted: 0 is DefaultCount; it is capped
	// at MaxCount.
	Count int
}

// SearchResult is one search hit.
type SearchResult struct {
	Title   string `json:"title"`
	URL     string `json:"url"`
	Snippet string `json:"snippet"`
	// Published is when the page was published, when the vendor says so.
	Published *time.Time `json:"published,omitempty"`
}

// Page is a fetched page as the vendor extracted it.
type Page struct {
	// URL is the page's URL as the vendor reports it (after redirects), else
	// the URL asked for.
	URL   string `json:"url"`
	Title string `json:"title"`
	// Content is markdown or plain text, at most MaxContentBytes.
	Content string `json:"content"`
	// Truncated says Content was cut at MaxContentBytes.
	Truncated bool `json:"truncated"`
}

// Bounds of searches and pages.
const (
	DefaultCount = 5
	MaxCount     = 20
	// MaxQueryChars bounds a query (Tavily's own limit, the strictest).
	MaxQueryChars = 400
	// MaxURLBytes bounds the URL given to fetch.
	MaxURLBytes = 2048
	// MaxContentBytes bounds a page's content.
	MaxContentBytes = 100 << 10
	// maxSnippetBytes bounds one result's snippet (Exa sends page text).
	maxSnippetBytes = 1000
)

// Errors of New, Search and Fetch that are not an *Error.
var (
	// ErrUnknownType: the type is not an installed web provider type.
	ErrUnknownType = errors.New("webtool: not a web provider type")
	// ErrUnsupported: the provider's type does not serve the operation.
	ErrUnsupported = errors.New("webtool: the provider does not serve this operation")
	// ErrInvalidInput: an empty or too long query, or a URL that is not an
	// absolute http(s) URL.
	ErrInvalidInput = errors.New("webtool: invalid input")
)

// Client calls one web provider. It is safe for concurrent use.
type Client struct {
	typ    catalog.Type
	v      vendor
	config map[string]string // string members, schema defaults applied
	key    string            // the credential's api_key, "" when none
	http   *http.Client
	// retryWait is the wait before the one retry of a 429 or 5xx answer
	// that sends no Retry-After.
	retryWait time.Duration
	// maxRetryAfter is the longest Retry-After honoured; a longer one is
	// not waited for.
	maxRetryAfter time.Duration
	// attemptTimeout bounds one request, answer included.
	attemptTimeout time.Duration
}

// NewClient returns a client of the provider. It fails for a type that is not an
// installed web type, a config that is not an object, a config that leaves
// out what the type needs (search_engine_id, a SearXNG base_url), and a type
// that requires a credential when none is given.
func NewClient(p Provider) (*Client, error) {
	reg, err := catalog.New(catalog.Options{})
	if err != nil {
		return nil, fmt.Errorf("webtool: provider types: %w", err)
	}
	t, ok := reg.Lookup(p.Type)
	v, known := vendors[p.Type]
	if !ok || t.Kind != catalog.KindWeb || !known {
		return nil, fmt.Errorf("%w: %q", ErrUnknownType, p.Type)
	}
	c := &Client{
		typ: t, v: v, config: map[string]string{}, http: p.HTTPClient,
		retryWait: 500 * time.Millisecond, maxRetryAfter: 5 * time.Second, attemptTimeout: 90 * time.Second,
	}
	if c.http == nil {
		c.http = http.DefaultClient
	}
	for name, def := range t.Config.Defaults() {
		if s, ok := def.(string); ok {
			c.config[name] = s
		}
	}
	if err := c.readConfig(p.Config); err != nil {
		return nil, err
	}
	if err := c.readCredential(p.Credential); err != nil {
		return nil, err
	}
	for _, need := range v.required {
		if c.config[need] == "" {
			return nil, fmt.Errorf("webtool: %s provider: config.%s is required", t.ID, need)
		}
	}
	return c, nil
}

func (c *Client) readConfig(raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return fmt.Errorf("webtool: %s provider: config is not a JSON object", c.typ.ID)
	}
	for name, v := range cfg {
		if s, ok := v.(string); ok && s != "" {
			c.config[name] = s
		}
	}
	return nil
}

func (c *Client) readCredential(raw json.RawMessage) error {
	props, _ := c.typ.Credential.Document()["properties"].(map[string]any)
	if _, takesKey := props["api_key"]; takesKey && len(raw) > 0 && string(raw) != "null" {
		var cred struct {
			APIKey string `json:"api_key"`
		}
		// The decode error is not wrapped: its text could quote the secret.
		if json.Unmarshal(raw, &cred) != nil {
			return fmt.Errorf("webtool: %s provider: credential is not a JSON object with an api_key", c.typ.ID)
		}
		c.key = cred.APIKey
	}
	if c.key == "" && c.typ.CredentialRequired {
		return fmt.Errorf("webtool: %s provider: no credential is stored", c.typ.ID)
	}
	return nil
}

// Type returns the provider type id.
func (c *Client) Type() string { return c.typ.ID }

// Serves reports whether the provider's type serves the operation
// (catalog.OperationSearch or catalog.OperationFetch).
func (c *Client) Serves(op catalog.Operation) bool { return slices.Contains(c.typ.Operations, op) }

// Search runs a web search. Failures are *Error (the vendor refused or
// failed), ErrInvalidInput, ErrUnsupported, or ctx's error.
func (c *Client) Search(ctx context.Context, r SearchRequest) ([]SearchResult, error) {
	if !c.Serves(catalog.OperationSearch) || c.v.search == nil {
		return nil, fmt.Errorf("%w: %s does not serve search", ErrUnsupported, c.typ.DisplayName)
	}
	q := strings.TrimSpace(r.Query)
	if err := checkQuery(q); err != nil {
		return nil, err
	}
	n := r.Count
	switch {
	case n <= 0:
		n = DefaultCount
	case n > MaxCount:
		n = MaxCount
	}
	res, err := c.v.search(ctx, c, q, n)
	if err != nil {
		return nil, err
	}
	out := make([]SearchResult, 0, min(len(res), n))
	for _, r := range res {
		if r.URL == "" {
			continue
		}
		r.Title = oneLine(r.Title)
		r.Snippet = truncate(oneLine(r.Snippet), maxSnippetBytes)
		out = append(out, r)
		if len(out) == n {
			break
		}
	}
	return out, nil
}

// Fetch asks the vendor for the page at rawURL (an absolute http or https
// URL) as markdown or text. Failures are as for Search.
func (c *Client) Fetch(ctx context.Context, rawURL string) (Page, error) {
	if !c.Serves(catalog.OperationFetch) || c.v.fetch == nil {
		return Page{}, fmt.Errorf("%w: %s does not serve fetch", ErrUnsupported, c.typ.DisplayName)
	}
	if err := CheckURL(rawURL); err != nil {
		return Page{}, err
	}
	p, err := c.v.fetch(ctx, c, rawURL)
	if err != nil {
		return Page{}, err
	}
	if p.URL == "" {
		p.URL = rawURL
	}
	p.Title = oneLine(p.Title)
	p.Content, p.Truncated = bound(p.Content, MaxContentBytes)
	return p, nil
}

// checkQuery refuses an empty or too long query.
func checkQuery(q string) error {
	switch {
	case q == "":
		return fmt.Errorf("%w: the query is empty", ErrInvalidInput)
	case len([]rune(q)) > MaxQueryChars:
		return fmt.Errorf("%w: the query is longer than %d characters", ErrInvalidInput, MaxQueryChars)
	}
	return nil
}
