// Package composiotest serves a local stand-in for Composio's v3 connected
// accounts API, speaking its wire protocol as svc uses it: POST
// /api/v3/connected_accounts with the project key in x-api-key and a JSON body
// {auth_config: {id}, connection: {user_id, callback_url?}}, answered 201 with
// the connected account (id, status, redirect_url and connectionData.val), and
// GET /api/v3/connected_accounts/{id} answering its status. A request that
// departs from the protocol is answered as Composio would (400, 401, 404) and
// recorded, so a test can say exactly what was wrong. The test drives the
// user's side: Complete, Fail and Expire change an account's status, as the
// user's consent at the app would.
//
// It also serves the tools API (tools.go): GET /api/v3/tools lists the
// actions of a toolkit and POST /api/v3/tools/execute/{tool_slug} runs one
// as a connected account. For tests only.
package composiotest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/svcdev/svc/internal/id"
)

// RedirectBase starts every redirect URL the stand-in hands out.
const RedirectBase = "https://connect.composio.dev/link/"

// Account is a connected account held by the stand-in.
type Account struct {
	ID           string
	AuthConfigID string
	UserID       string
	CallbackURL  string
	Status       string
	RedirectURL  string
	// Toolkit is the app the account is connected to (github unless made
	// with AddAccount).
	Toolkit string
}

// Server is a running stand-in.
type Server struct {
	*httptest.Server
	// Key is the project API key the server accepts.
	Key string

	mu          sync.Mutex
	authConfigs map[string]string // auth config id -> auth scheme
	accounts    map[string]*Account
	problems    []string
	requests    int
	failCount   int // answer this many next requests with failStatus
	failStatus  int
	tools       toolCatalog
}

// Start serves the stand-in until the test ends, accepting key and knowing
// the auth config ac_oauth (scheme OAUTH2: accounts start INITIATED with a
// redirect URL) and ac_apikey (scheme API_KEY: accounts are ACTIVE at once).
func Start(t testing.TB, key string) *Server {
	t.Helper()
	s := &Server{Key: key, authConfigs: map[string]string{"ac_oauth": "OAUTH2", "ac_apikey": "API_KEY"}, accounts: map[string]*Account{}, tools: newToolCatalog()}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Problems returns the departures from the protocol seen so far.
func (s *Server) Problems() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.problems...)
}

// Requests counts the requests served so far.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Accounts returns copies of the connected accounts created so far.
func (s *Server) Accounts() []Account {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Account, 0, len(s.accounts))
	for _, a := range s.accounts {
		out = append(out, *a)
	}
	return out
}

// Complete makes the account ACTIVE, as the user's consent does.
func (s *Server) Complete(accountID string) { s.set(accountID, "ACTIVE") }

// Fail makes the account FAILED, as a refused consent does.
func (s *Server) Fail(accountID string) { s.set(accountID, "FAILED") }

// Expire makes the account EXPIRED, as Composio does when the user never comes.
func (s *Server) Expire(accountID string) { s.set(accountID, "EXPIRED") }

// FailNext answers the next n requests with status (a 500, say) before
// looking at them.
func (s *Server) FailNext(n, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failCount, s.failStatus = n, status
}

func (s *Server) set(accountID, status string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.accounts[accountID]; ok {
		a.Status = status
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	if s.failCount > 0 {
		s.failCount--
		writeError(w, s.failStatus, "Internal server error")
		return
	}
	if r.Header.Get("x-api-key") != s.Key {
		writeError(w, http.StatusUnauthorized, "Invalid API key")
		return
	}
	if r.Header.Get("Authorization") != "" {
		s.problem(w, http.StatusBadRequest, "Authorization header sent; Composio takes the key in x-api-key")
		return
	}
	const collection = "/api/v3/connected_accounts"
	switch {
	case r.Method == http.MethodGet && r.URL.Path == toolsPath:
		s.listTools(w, r)
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, executePath):
		s.execute(w, r, strings.TrimPrefix(r.URL.Path, executePath))
	case r.Method == http.MethodPost && r.URL.Path == collection:
		s.create(w, r)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, collection+"/"):
		s.read(w, strings.TrimPrefix(r.URL.Path, collection+"/"))
	default:
		s.problem(w, http.StatusNotFound, "request %s %s, want POST %s or GET %s/{id}", r.Method, r.URL.Path, collection, collection)
	}
}

// createRequest is the body Composio's create endpoint takes (the members svc
// uses; Composio knows more, all optional).
type createRequest struct {
	AuthConfig *struct {
		ID string `json:"id"`
	} `json:"auth_config"`
	Connection *struct {
		UserID      string `json:"user_id"`
		CallbackURL string `json:"callback_url"`
	} `json:"connection"`
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		s.problem(w, http.StatusBadRequest, "Content-Type %q, want application/json", ct)
		return
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	var body createRequest
	if err := dec.Decode(&body); err != nil {
		s.problem(w, http.StatusBadRequest, "body is not the create request: %v", err)
		return
	}
	if body.AuthConfig == nil || body.AuthConfig.ID == "" || body.Connection == nil {
		s.problem(w, http.StatusBadRequest, "body lacks auth_config.id or connection")
		return
	}
	scheme, ok := s.authConfigs[body.AuthConfig.ID]
	if !ok {
		writeError(w, http.StatusNotFound, "Auth config not found")
		return
	}
	if body.Connection.UserID == "" {
		s.problem(w, http.StatusBadRequest, "connection.user_id is empty")
		return
	}
	a := &Account{
		ID: shortID("ca_"), AuthConfigID: body.AuthConfig.ID, UserID: body.Connection.UserID,
		CallbackURL: body.Connection.CallbackURL, Status: "INITIATED", Toolkit: "github",
	}
	val := map[string]any{"status": a.Status}
	if scheme == "API_KEY" {
		a.Status, val["status"] = "ACTIVE", "ACTIVE"
	} else {
		a.RedirectURL = RedirectBase + "lk_" + a.ID[3:]
		val["redirectUrl"] = a.RedirectURL
	}
	s.accounts[a.ID] = a
	answer := map[string]any{
		"id":             a.ID,
		"connectionData": map[string]any{"authScheme": scheme, "val": val},
		"status":         a.Status,
		"redirect_url":   nil,
		"deprecated":     map[string]any{"uuid": "00000000-0000-0000-0000-000000000000", "authConfigUuid": "00000000-0000-0000-0000-000000000001"},
	}
	if a.RedirectURL != "" {
		answer["redirect_url"] = a.RedirectURL
	}
	writeJSON(w, http.StatusCreated, answer)
}

func (s *Server) read(w http.ResponseWriter, accountID string) {
	a, ok := s.accounts[accountID]
	if !ok {
		writeError(w, http.StatusNotFound, "Connected account not found")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": a.ID, "status": a.Status, "user_id": a.UserID, "is_disabled": false, "status_reason": nil,
		"auth_config": map[string]any{"id": a.AuthConfigID, "auth_scheme": s.authConfigs[a.AuthConfigID], "is_composio_managed": true, "is_disabled": false},
		"toolkit":     map[string]any{"slug": a.Toolkit},
		"created_at":  "2025-01-01T00:00:00Z", "updated_at": "2025-01-01T00:00:00Z",
	})
}

func (s *Server) problem(w http.ResponseWriter, status int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.problems = append(s.problems, msg)
	writeError(w, status, msg)
}

// writeError answers in Composio's error shape.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "status": status, "request_id": "req_test"}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// shortID is prefix and the last 12 characters of a new id: its random
// part's low end, which differs between ids made in the same millisecond
// (the ids' leading characters are their time and do not).
func shortID(prefix string) string {
	s := id.New("x")
	return prefix + s[len(s)-12:]
}
