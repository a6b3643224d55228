package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/svcdev/svc/internal/agent"
	"github.com/svcdev/svc/internal/llm"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/tool"
)

// Tool names.
const (
	SearchToolName = "web_search"
	FetchToolName  = "web_fetch"
)

var searchParams = json.RawMessage(fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "query": {"type": "string", "minLength": 1, "maxLength": %d, "description": "What to search the web for."},
    "count": {"type": "integer", "minimum": 1, "maximum": %d, "description": "How many results to return (default %d)."}
  },
  "required": ["query"],
  "additionalProperties": false
}`, MaxQueryChars, MaxCount, DefaultCount))

var fetchParams = json.RawMessage(fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "url": {"type": "string", "maxLength": %d, "description": "Absolute http:// or https:// URL of the page."}
  },
  "required": ["url"],
  "additionalProperties": false
}`, MaxURLBytes))

// Tools returns the web tools for the operations ops ("search", "fetch"):
// web_search and web_fetch, in that order. Operations the client's type does
// not serve, and unknown ones, are left out (the agent's configuration only
// names operations its provider serves).
func Tools(c *Client, ops []string) []tool.Tool {
	var out []tool.Tool
	want := func(op catalog.Operation) bool {
		for _, o := range ops {
			if o == string(op) {
				return c.Serves(op)
			}
		}
		return false
	}
	if want(catalog.OperationSearch) {
		out = append(out, tool.Tool{
			Def: llm.Tool{
				Name: SearchToolName,
				Description: fmt.Sprintf("Search the web (through %s). Returns up to count results, each with title, url, snippet and, when known, "+
					"the publication date. Use web_fetch to read a page in full.", c.typ.DisplayName),
				Parameters: searchParams,
			},
			Call: c.callSearch, Toolset: agent.ToolsetWeb,
		})
	}
	if want(catalog.OperationFetch) {
		out = append(out, tool.Tool{
			Def: llm.Tool{
				Name: FetchToolName,
				Description: fmt.Sprintf("Read a web page (fetched by %s, not by you): returns its url, title and content as markdown or text, "+
					"at most %d KB; truncated is true when the content was cut.", c.typ.DisplayName, MaxContentBytes>>10),
				Parameters: fetchParams,
			},
			Call: c.callFetch, Toolset: agent.ToolsetWeb,
		})
	}
	return out
}

// searchArgs are web_search's arguments.
type searchArgs struct {
	Query string `json:"query"`
	Count *int   `json:"count"`
}

// searchOutput is web_search's result.
type searchOutput struct {
	Results []SearchResult `json:"results"`
}

func (c *Client) callSearch(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	var a searchArgs
	if res, ok := tool.Decode(raw, &a); !ok {
		return res, nil
	}
	q := strings.TrimSpace(a.Query)
	n := DefaultCount
	switch {
	case q == "":
		return tool.Errorf("invalid arguments: query is required and must not be blank"), nil
	case len([]rune(q)) > MaxQueryChars:
		return tool.Errorf("invalid arguments: query must be at most %d characters", MaxQueryChars), nil
	case a.Count != nil && (*a.Count < 1 || *a.Count > MaxCount):
		return tool.Errorf("invalid arguments: count must be between 1 and %d", MaxCount), nil
	case a.Count != nil:
		n = *a.Count
	}
	res, err := c.Search(ctx, SearchRequest{Query: q, Count: n})
	if err != nil {
		return failure(ctx, SearchToolName, err)
	}
	return tool.JSON(searchOutput{Results: res})
}

// fetchArgs are web_fetch's arguments.
type fetchArgs struct {
	URL string `json:"url"`
}

func (c *Client) callFetch(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	var a fetchArgs
	if res, ok := tool.Decode(raw, &a); !ok {
		return res, nil
	}
	u := strings.TrimSpace(a.URL)
	if err := CheckURL(u); err != nil {
		return tool.Errorf("invalid arguments: %s", strings.TrimPrefix(err.Error(), ErrInvalidInput.Error()+": ")), nil
	}
	p, err := c.Fetch(ctx, u)
	if err != nil {
		return failure(ctx, FetchToolName, err)
	}
	return tool.JSON(p)
}

// failure turns a Client error into the call's outcome: ctx's end is the
// step's error; anything else is the model's to read. Messages are our own
// words (an *Error's, or a sentinel's), never the vendor's.
func failure(ctx context.Context, name string, err error) (tool.Result, error) {
	if ctx.Err() != nil {
		return tool.Result{}, fmt.Errorf("%s: %w", name, context.Cause(ctx))
	}
	var e *Error
	switch {
	case errors.As(err, &e):
		return tool.Errorf("%s failed: %s", name, e.Message), nil
	case errors.Is(err, ErrInvalidInput), errors.Is(err, ErrUnsupported):
		return tool.Errorf("%s failed: %s", name, strings.TrimPrefix(err.Error(), "webtool: ")), nil
	default:
		return tool.Result{}, fmt.Errorf("%s: %w", name, err)
	}
}
