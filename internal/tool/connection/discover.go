package connection

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"
)

// maxListPages bounds the list requests of one discovery.
const maxListPages = 8

// action is one action of a toolkit, as Composio lists it.
type action struct {
	Slug        string
	Name        string
	Description string
	// Version is the toolkit version it was listed at; executions name it,
	// so the action run is the one whose schema the model saw.
	Version string
	// Params is the input JSON Schema, made fit for a tool definition.
	Params json.RawMessage
}

// catalog is what discovery found for one connection.
type catalog struct {
	actions []action
	// truncated: the toolkit offers more (allowed) actions than MaxActions.
	truncated bool
}

// listItem is the part of an item of GET /api/v3/tools that svc reads.
type listItem struct {
	Slug            string          `json:"slug"`
	Name            string          `json:"name"`
	Description     string          `json:"description"`
	InputParameters json.RawMessage `json:"input_parameters"`
	Version         string          `json:"version"`
	Toolkit         struct {
		Slug string `json:"slug"`
	} `json:"toolkit"`
}

// listAnswer is a page of GET /api/v3/tools.
type listAnswer struct {
	Items      []listItem `json:"items"`
	NextCursor *string    `json:"next_cursor"`
}

// actions returns the actions of tg's toolkit that allow permits (nil: all),
// at most MaxActions, from the cache when it holds them.
func (t *Toolset) actions(ctx context.Context, tg target, allow []string) (catalog, error) {
	key := cacheKey(tg, allow)
	if c, ok := t.cache.get(key); ok {
		return c, nil
	}
	c, err := t.discover(ctx, tg, allow)
	if err != nil {
		var ve *vendorError
		if errors.As(err, &ve) {
			t.log.Warn("listing a connection's actions failed", "connection_id", tg.connectionID, "status", ve.status, "reason", ve.msg)
			return catalog{}, &Error{ConnectionID: tg.connectionID, Code: CodeUnavailable, Msg: "listing the connection's actions failed: " + ve.msg, Transient: ve.transient}
		}
		return catalog{}, err
	}
	t.cache.put(key, c)
	return c, nil
}

// discover lists the toolkit's actions at their latest version, page by
// page, keeping the allowed ones of the toolkit until MaxActions are found.
// With an allow-list only the named actions are asked for.
func (t *Toolset) discover(ctx context.Context, tg target, allow []string) (catalog, error) {
	allowed := map[string]bool{}
	for _, a := range allow {
		allowed[strings.ToUpper(a)] = true
	}
	q := url.Values{"toolkit_slug": {tg.app}, "toolkit_versions": {"latest"}, "limit": {strconv.Itoa(MaxActions)}}
	if allow != nil {
		q.Set("tool_slugs", strings.Join(allow, ","))
	}
	var c catalog
	seen := map[string]bool{}
	for page := 0; page < maxListPages; page++ {
		var ans listAnswer
		if err := t.call(ctx, tg, "GET", "/api/v3/tools?"+q.Encode(), nil, &ans); err != nil {
			return catalog{}, err
		}
		for _, it := range ans.Items {
			up := strings.ToUpper(it.Slug)
			switch {
			case it.Slug == "" || seen[up]:
				continue
			case it.Toolkit.Slug != "" && !strings.EqualFold(it.Toolkit.Slug, tg.app):
				continue // another toolkit's action: not the connection's
			case allow != nil && !allowed[up]:
				continue
			}
			params, ok := parameters(it.InputParameters)
			if !ok {
				t.log.Warn("connection action left out: its input schema is not an object schema of a usable size", "connection_id", tg.connectionID, "action", it.Slug)
				continue
			}
			if len(c.actions) == MaxActions {
				c.truncated = true
				return c, nil
			}
			seen[up] = true
			c.actions = append(c.actions, action{Slug: it.Slug, Name: it.Name, Description: it.Description, Version: it.Version, Params: params})
		}
		if ans.NextCursor == nil || *ans.NextCursor == "" {
			return c, nil
		}
		if len(c.actions) == MaxActions {
			c.truncated = true
			return c, nil
		}
		q.Set("cursor", *ans.NextCursor)
	}
	c.truncated = true
	return c, nil
}

// cacheKey identifies a discovery: the provider (so workspaces never share
// entries), where and with which key it asked, the toolkit and the
// allow-list.
func cacheKey(tg target, allow []string) string {
	h := sha256.New()
	for _, s := range []string{tg.providerID, tg.baseURL, tg.key, tg.app} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	if allow == nil {
		h.Write([]byte{1})
	}
	for _, a := range allow {
		h.Write([]byte(a))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}
