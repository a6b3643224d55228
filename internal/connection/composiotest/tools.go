package composiotest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// The tools API's paths.
const (
	toolsPath   = "/api/v3/tools"
	executePath = "/api/v3/tools/execute/"
)

// maxToolsPage is the largest page size the stand-in accepts, like Composio's
// own bound on limit.
const maxToolsPage = 1000

// listParams are the query parameters Composio's tool list knows; any other
// is a departure from the protocol.
var listParams = []string{"toolkit_slug", "tool_slugs", "limit", "cursor", "toolkit_versions", "important", "tags", "search", "auth_config_ids", "scopes", "query"}

// Tool is an action of a toolkit, as the tool list describes it.
type Tool struct {
	// Slug names the action (GITHUB_CREATE_AN_ISSUE).
	Slug string
	// Toolkit is the toolkit's slug (github).
	Toolkit     string
	Name        string
	Description string
	// InputParameters is the JSON Schema of the action's arguments.
	InputParameters map[string]any
	// Version is the toolkit version the action is listed at (20250909_00).
	Version string
	// Run serves an execution with the arguments: data on success, else a
	// non-empty error message (the app's refusal, as Composio reports it with
	// successful false). Nil answers {"echo": arguments}.
	Run func(arguments map[string]any) (data any, errMsg string)
}

// Execution is one execute request the stand-in served.
type Execution struct {
	Slug               string
	ConnectedAccountID string
	UserID             string
	Version            string
	Arguments          map[string]any
}

// toolCatalog is the stand-in's tools, in listing order.
type toolCatalog struct {
	tools      []Tool
	lists      []url.Values
	executions []Execution
}

func newToolCatalog() toolCatalog { return toolCatalog{} }

// AddTools adds actions to the catalogue, listed after those added before.
func (s *Server) AddTools(tools ...Tool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tools.tools = append(s.tools.tools, tools...)
}

// AddAccount adds an ACTIVE connected account of toolkit filed under userID,
// as a completed authorization leaves it, and returns its id.
func (s *Server) AddAccount(userID, toolkit string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := &Account{ID: shortID("ca_"), AuthConfigID: "ac_oauth", UserID: userID, Status: "ACTIVE", Toolkit: toolkit}
	s.accounts[a.ID] = a
	return a.ID
}

// ToolLists returns the query of each tool list request served so far.
func (s *Server) ToolLists() []url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tools.lists)
}

// Executions returns the execute requests served so far.
func (s *Server) Executions() []Execution {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tools.executions)
}

// listTools answers GET /api/v3/tools: the actions of toolkit_slug (and of
// tool_slugs when given), a page of at most limit from cursor, with
// next_cursor when more follow.
func (s *Server) listTools(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for k := range q {
		if !slices.Contains(listParams, k) {
			s.problem(w, http.StatusBadRequest, "unknown query parameter %q", k)
			return
		}
	}
	s.tools.lists = append(s.tools.lists, q)
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxToolsPage {
			s.problem(w, http.StatusBadRequest, "limit %q is not 1 to %d", v, maxToolsPage)
			return
		}
		limit = n
	}
	offset := 0
	if c := q.Get("cursor"); c != "" {
		raw, err := base64.RawURLEncoding.DecodeString(c)
		n, aerr := strconv.Atoi(string(raw))
		if err != nil || aerr != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "Invalid cursor")
			return
		}
		offset = n
	}
	var slugs []string
	if v := q.Get("tool_slugs"); v != "" {
		slugs = strings.Split(v, ",")
	}
	toolkit := q.Get("toolkit_slug")
	var match []Tool
	for _, t := range s.tools.tools {
		if toolkit != "" && !strings.EqualFold(t.Toolkit, toolkit) {
			continue
		}
		if slugs != nil && !slices.ContainsFunc(slugs, func(x string) bool { return strings.EqualFold(x, t.Slug) }) {
			continue
		}
		match = append(match, t)
	}
	items := []any{}
	for i := offset; i < len(match) && i < offset+limit; i++ {
		items = append(items, toolItem(match[i]))
	}
	var next any
	if offset+limit < len(match) {
		next = base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(offset + limit)))
	}
	pages := (len(match) + limit - 1) / limit
	writeJSON(w, http.StatusOK, map[string]any{
		"items": items, "next_cursor": next, "total_pages": pages, "current_page": offset/limit + 1, "total_items": len(match),
	})
}

// toolItem is a tool as the list shows it.
func toolItem(t Tool) map[string]any {
	params := t.InputParameters
	if params == nil {
		params = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	return map[string]any{
		"slug": t.Slug, "name": t.Name, "description": t.Description,
		"input_parameters":  params,
		"output_parameters": map[string]any{"type": "object", "properties": map[string]any{"data": map[string]any{"type": "object"}}},
		"toolkit":           map[string]any{"slug": t.Toolkit, "name": t.Toolkit, "logo": "https://logos.composio.dev/api/" + t.Toolkit},
		"tags":              []string{}, "version": t.Version, "available_versions": []string{t.Version},
		"is_deprecated": false, "no_auth": false, "scopes": []string{},
		"deprecated": map[string]any{"displayName": t.Name, "is_deprecated": false},
	}
}

// executeRequest is the body of Composio's execute endpoint.
type executeRequest struct {
	ConnectedAccountID   string          `json:"connected_account_id"`
	UserID               string          `json:"user_id"`
	Version              string          `json:"version"`
	Arguments            json.RawMessage `json:"arguments"`
	Text                 string          `json:"text"`
	CustomAuthParams     json.RawMessage `json:"custom_auth_params"`
	CustomConnectionData json.RawMessage `json:"custom_connection_data"`
	AllowTracing         *bool           `json:"allow_tracing"`
	EntityID             string          `json:"entity_id"`
}

// execute answers POST /api/v3/tools/execute/{slug} as Composio does: 200
// with {data, error, successful, log_id, session_info}, the app's own
// refusal reported with successful false.
func (s *Server) execute(w http.ResponseWriter, r *http.Request, slug string) {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		s.problem(w, http.StatusBadRequest, "Content-Type %q, want application/json", ct)
		return
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	var body executeRequest
	if err := dec.Decode(&body); err != nil {
		s.problem(w, http.StatusBadRequest, "body is not the execute request: %v", err)
		return
	}
	if body.Text != "" || body.CustomAuthParams != nil || body.CustomConnectionData != nil {
		s.problem(w, http.StatusBadRequest, "text or custom auth sent; svc sends arguments for a connected account")
		return
	}
	var args map[string]any
	trimmed := bytes.TrimSpace(body.Arguments)
	if len(trimmed) == 0 || trimmed[0] != '{' || json.Unmarshal(trimmed, &args) != nil {
		s.problem(w, http.StatusBadRequest, "arguments is not a JSON object")
		return
	}
	i := slices.IndexFunc(s.tools.tools, func(t Tool) bool { return t.Slug == slug })
	if i < 0 {
		writeError(w, http.StatusNotFound, "Tool "+slug+" not found")
		return
	}
	t := s.tools.tools[i]
	a, ok := s.accounts[body.ConnectedAccountID]
	switch {
	case !ok:
		writeError(w, http.StatusNotFound, "Connected account not found")
		return
	case body.UserID != "" && body.UserID != a.UserID:
		s.problem(w, http.StatusBadRequest, "user_id %q is not the connected account's user %q", body.UserID, a.UserID)
		return
	case a.Status != "ACTIVE":
		writeError(w, http.StatusBadRequest, "Connected account is not active")
		return
	case !strings.EqualFold(a.Toolkit, t.Toolkit):
		writeError(w, http.StatusBadRequest, "Connected account does not belong to the toolkit of the tool")
		return
	case body.Version != "" && body.Version != t.Version:
		writeError(w, http.StatusBadRequest, "Tool version "+body.Version+" not found")
		return
	}
	s.tools.executions = append(s.tools.executions, Execution{Slug: slug, ConnectedAccountID: a.ID, UserID: body.UserID, Version: body.Version, Arguments: args})
	var data any = map[string]any{"echo": args}
	errMsg := ""
	if t.Run != nil {
		data, errMsg = t.Run(args)
	}
	answer := map[string]any{"data": data, "error": nil, "successful": true, "log_id": shortID("log_"), "session_info": nil}
	if errMsg != "" {
		answer["data"], answer["error"], answer["successful"] = map[string]any{}, errMsg, false
	}
	writeJSON(w, http.StatusOK, answer)
}
