package web

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/svcdev/svc/internal/tool"
)

func toolNamed(t *testing.T, tools []tool.Tool, name string) tool.Tool {
	t.Helper()
	for _, tl := range tools {
		if tl.Def.Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %s among %d", name, len(tools))
	return tool.Tool{}
}

// TestTools: the tools offered follow the operations asked for and served;
// their parameter schemas are JSON objects.
func TestTools(t *testing.T) {
	t.Parallel()
	_, brave := braveStand(t, ok(braveAnswer))
	jina := newTestClient(t, "jina", nil)
	cases := []struct {
		c    *Client
		ops  []string
		want []string
	}{
		{jina, []string{"fetch", "search"}, []string{SearchToolName, FetchToolName}},
		{jina, []string{"fetch"}, []string{FetchToolName}},
		{jina, nil, nil},
		{brave, []string{"fetch", "search"}, []string{SearchToolName}},
		{brave, []string{"fetch", "crawl"}, nil},
	}
	for _, tc := range cases {
		var got []string
		for _, tl := range Tools(tc.c, tc.ops) {
			got = append(got, tl.Def.Name)
			var schema map[string]any
			if err := json.Unmarshal(tl.Def.Parameters, &schema); err != nil || schema["type"] != "object" {
				t.Errorf("%s parameters: %v %v", tl.Def.Name, schema, err)
			}
			if !strings.Contains(tl.Def.Description, tc.c.typ.DisplayName) {
				t.Errorf("%s description does not name the vendor: %s", tl.Def.Name, tl.Def.Description)
			}
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s %v: tools %v, want %v", tc.c.Type(), tc.ops, got, tc.want)
		}
	}
}

// TestSearchTool: arguments are checked before anything is sent; a good
// call returns the results as JSON; a vendor's refusal is an error result
// without the key or the vendor's words.
func TestSearchTool(t *testing.T) {
	t.Parallel()
	bad := []struct{ args, want string }{
		{``, "query is required"},
		{`{}`, "query is required"},
		{`{"query":"   "}`, "query is required"},
		{`{"query":"` + strings.Repeat("a", MaxQueryChars+1) + `"}`, "at most 400 characters"},
		{`{"query":"q","count":0}`, "count must be between 1 and 20"},
		{`{"query":"q","count":21}`, "count must be between 1 and 20"},
		{`{"query":"q","count":"5"}`, "invalid arguments"},
		{`{"query":"q","limit":5}`, "invalid arguments"},
		{`{"query":"q"} {}`, "trailing data"},
		{`[1]`, "invalid arguments"},
	}
	s, c := braveStand(t, ok(braveAnswer))
	search := toolNamed(t, Tools(c, []string{"search"}), SearchToolName)
	for _, tc := range bad {
		res, err := search.Call(context.Background(), json.RawMessage(tc.args))
		if err != nil || !res.IsError || !strings.Contains(res.Text, tc.want) {
			t.Errorf("args %.40s: %+v %v, want an error result with %q", tc.args, res, err, tc.want)
		}
	}
	if n := len(s.requests()); n != 0 {
		t.Fatalf("bad arguments reached the vendor: %d requests", n)
	}

	res, err := search.Call(context.Background(), json.RawMessage(`{"query":"go generics"}`))
	if err != nil || res.IsError {
		t.Fatalf("good call: %+v %v", res, err)
	}
	if got := s.only(t).Query.Get("count"); got != "5" {
		t.Errorf("default count sent as %s, want 5", got)
	}
	var out struct {
		Results []SearchResult `json:"results"`
	}
	if err := json.Unmarshal([]byte(res.Text), &out); err != nil || len(out.Results) != 1 || out.Results[0].URL != "https://example.org/" {
		t.Fatalf("result %s: %v", res.Text, err)
	}

	_, refusing := braveStand(t, answer{status: 401, body: `{"error":"bad key ` + testKey + ` ` + vendorBody + `"}`})
	res, err = toolNamed(t, Tools(refusing, []string{"search"}), SearchToolName).Call(context.Background(), json.RawMessage(`{"query":"q","count":20}`))
	if err != nil || !res.IsError || res.Text != "web_search failed: Brave Search refused the credential (HTTP 401)" {
		t.Fatalf("refused: %+v %v", res, err)
	}
	noSecrets(t, res.Text)
}

// TestFetchTool: the URL must be absolute http(s); a good call returns the
// page as JSON; the caller's cancellation is a Go error, not a result.
func TestFetchTool(t *testing.T) {
	t.Parallel()
	s := newStand(t, "POST", "/", prefixed("Authorization", "Bearer "),
		ok(`{"code":200,"status":20000,"data":{"title":"T","url":"https://go.dev/","content":"# Go"}}`))
	c := newTestClient(t, "jina", map[string]any{"reader_url": s.srv.URL})
	fetch := toolNamed(t, Tools(c, []string{"fetch"}), FetchToolName)
	for _, args := range []string{`{}`, `{"url":""}`, `{"url":"go.dev"}`, `{"url":"/doc"}`, `{"url":"ftp://go.dev/x"}`, `{"url":"https://u:p@go.dev/"}`, `{"url":42}`, `{"href":"https://go.dev/"}`} {
		res, err := fetch.Call(context.Background(), json.RawMessage(args))
		if err != nil || !res.IsError || !strings.HasPrefix(res.Text, "invalid arguments") {
			t.Errorf("args %s: %+v %v", args, res, err)
		}
	}
	if n := len(s.requests()); n != 0 {
		t.Fatalf("bad arguments reached the vendor: %d requests", n)
	}
	res, err := fetch.Call(context.Background(), json.RawMessage(`{"url":"https://go.dev/"}`))
	if err != nil || res.IsError {
		t.Fatalf("good call: %+v %v", res, err)
	}
	var p Page
	if err := json.Unmarshal([]byte(res.Text), &p); err != nil || p != (Page{URL: "https://go.dev/", Title: "T", Content: "# Go"}) {
		t.Fatalf("page %s: %v", res.Text, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := fetch.Call(ctx, json.RawMessage(`{"url":"https://go.dev/"}`)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v, want context.Canceled", err)
	}
}
