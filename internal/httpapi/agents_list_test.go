package httpapi_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// names returns the names of a list page's items, in order.
func names(page map[string]any) []string {
	var out []string
	for _, it := range page["items"].([]any) {
		out = append(out, it.(map[string]any)["name"].(string))
	}
	return out
}

func TestAgentsLabelsAreValidated(t *testing.T) {
	t.Parallel()
	b := setupAgents(t)
	create := func(lbl map[string]any) (int, map[string]any) {
		status, out, _ := b.do(t, http.MethodPost, "/api/v1/agents", map[string]any{"name": "l", "labels": lbl, "config": map[string]any{"model": "main"}})
		return status, out
	}
	thirtyTwo := map[string]any{}
	for i := range 32 {
		thirtyTwo["k"+strconv.Itoa(i)] = "v"
	}
	status, out := create(thirtyTwo)
	require.Equal(t, http.StatusCreated, status, out)
	thirtyTwo["k32"] = "v"
	status, out = create(thirtyTwo)
	require.Equal(t, http.StatusBadRequest, status, out)
	require.Equal(t, []string{"labels"}, fields(t, out))

	for key, value := range map[string]string{
		"Team": "v", "-x": "v", "has space": "v", "k:v": "v", "caf\u00e9": "v", strings.Repeat("k", 64): "v",
	} {
		status, out := create(map[string]any{key: value})
		require.Equal(t, http.StatusBadRequest, status, "key %q: %v", key, out)
		require.Equal(t, []string{"labels"}, fields(t, out), "key %q", key)
	}
	for _, value := range []string{strings.Repeat("v", 64), "line\nbreak", "nul\u0000"} {
		status, out := create(map[string]any{"team": value})
		require.Equal(t, http.StatusBadRequest, status, "value %q: %v", value, out)
		require.Contains(t, fields(t, out), "labels.team", "value %q", value)
	}
	// PATCH validates the same way.
	a := b.mustAgent(t, "patched", map[string]any{"model": "main"})
	status, out, _ = b.do(t, http.MethodPatch, "/api/v1/agents/"+a["id"].(string), map[string]any{"labels": map[string]any{"Bad": "x"}}, "If-Match", etag(a))
	require.Equal(t, http.StatusBadRequest, status, out)
	require.Equal(t, []string{"labels"}, fields(t, out))
	list := b.get(t, "/api/v1/agents")
	require.Len(t, list["items"], 2, "no refused agent was stored")
}

func TestAgentsListFilters(t *testing.T) {
	t.Parallel()
	b := setupAgents(t)
	mk := func(name, desc string, lbl map[string]any) map[string]any {
		return b.mustCreate(t, "agents", map[string]any{"name": name, "description": desc, "labels": lbl, "config": map[string]any{"model": "main"}})
	}
	mk("Alpha", "searches the web", map[string]any{"team": "search", "env": "prod", "tier": "gold"})
	mk("Beta", "writes 100% reports", map[string]any{"team": "search", "env": "dev"})
	gamma := mk("Gamma", "", map[string]any{"team": "ops", "env": "prod", "tier": "gold"})
	mk("delta_ALPHA", "support", map[string]any{"team": "search", "env": "prod", "tier": "gold", "url": "http://x:1"})
	_, _, _ = b.do(t, http.MethodPost, "/api/v1/agents/"+gamma["id"].(string)+"/archive", nil, "If-Match", etag(gamma))

	list := func(query string) map[string]any { return b.get(t, "/api/v1/agents?"+query) }
	require.Equal(t, []string{"delta_ALPHA", "Gamma", "Beta", "Alpha"}, names(list("")), "newest first, archived included by default")
	require.Equal(t, []string{"delta_ALPHA", "Beta", "Alpha"}, names(list("label=team:search")))
	require.Equal(t, []string{"delta_ALPHA", "Alpha"}, names(list("label=team:search&label=env:prod&label=tier:gold")))
	require.Equal(t, []string{"delta_ALPHA"}, names(list("label="+url.QueryEscape("url:http://x:1"))), "the value is what follows the first ':'")
	require.Empty(t, names(list("label=team:nobody")))
	require.Equal(t, []string{"Gamma"}, names(list("archived=true")))
	require.Equal(t, []string{"delta_ALPHA", "Beta", "Alpha"}, names(list("archived=false")))
	require.Equal(t, []string{"delta_ALPHA", "Alpha"}, names(list("q=alpha")), "case-insensitive, in the name")
	require.Equal(t, []string{"Alpha"}, names(list("q=WEB")), "in the description")
	require.Equal(t, []string{"Beta"}, names(list("q="+url.QueryEscape("100%"))), "% is a character, not a wildcard")
	require.Equal(t, []string{"delta_ALPHA"}, names(list("q=a_a")), "_ is a character, not a wildcard")
	require.Equal(t, []string{"Alpha"}, names(list("q=alpha&label=team:search&archived=false&label=env:prod&limit=50&cursor="+url.QueryEscape(cursorAfter(t, b, "delta_ALPHA")))))

	// Pages with the filters applied.
	first := list("label=team:search&limit=2")
	require.Equal(t, []string{"delta_ALPHA", "Beta"}, names(first))
	second := list("label=team:search&limit=2&cursor=" + url.QueryEscape(first["next_cursor"].(string)))
	require.Equal(t, []string{"Alpha"}, names(second))
	require.Nil(t, second["next_cursor"])
	// Exactly limit items: one page, and no cursor to an empty one.
	exact := list("label=team:search&limit=3")
	require.Equal(t, []string{"delta_ALPHA", "Beta", "Alpha"}, names(exact))
	require.Nil(t, exact["next_cursor"])
}

// cursorAfter returns the cursor of a one-item page ending at the named agent.
func cursorAfter(t *testing.T, b *agentsBundle, name string) string {
	t.Helper()
	page := b.get(t, "/api/v1/agents?limit=1")
	for names(page)[0] != name {
		page = b.get(t, "/api/v1/agents?limit=1&cursor="+url.QueryEscape(page["next_cursor"].(string)))
	}
	return page["next_cursor"].(string)
}

func TestAgentsListRefusals(t *testing.T) {
	t.Parallel()
	b := setupAgents(t)
	nine := url.Values{}
	for i := range 9 {
		nine.Add("label", "k"+strconv.Itoa(i)+":v")
	}
	eight := url.Values{}
	for i := range 8 {
		eight.Add("label", "k"+strconv.Itoa(i)+":v")
	}
	status, out, _ := b.do(t, http.MethodGet, "/api/v1/agents?"+eight.Encode(), nil)
	require.Equal(t, http.StatusOK, status, out)
	// Two values for one key: nothing can carry both, so nothing matches.
	b.mustCreate(t, "agents", map[string]any{"name": "a", "labels": map[string]any{"team": "a"}, "config": map[string]any{"model": "main"}})
	status, out, _ = b.do(t, http.MethodGet, "/api/v1/agents?label=team:a&label=team:b", nil)
	require.Equal(t, http.StatusOK, status, out)
	require.Empty(t, out["items"])
	cases := map[string]string{
		nine.Encode():                           "label",
		"label=novalue":                         "label",
		"label=Team:x":                          "label",
		"label=team:" + strings.Repeat("v", 64): "label",
		"q=" + url.QueryEscape("a\nb"):          "q",
		"archived=maybe":                        "archived",
		"cursor=%21%21":                         "cursor",
	}
	for query, field := range cases {
		status, out, _ := b.do(t, http.MethodGet, "/api/v1/agents?"+query, nil)
		require.Equal(t, http.StatusBadRequest, status, "%s: %v", query, out)
		require.Contains(t, fields(t, out), field, query)
	}
}
