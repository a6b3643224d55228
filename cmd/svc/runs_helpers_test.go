package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/agent"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/llm/llmtest"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/refcheck"
	"github.com/svcdev/svc/internal/revision"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/secret"
	"github.com/svcdev/svc/internal/skill"
	"github.com/svcdev/svc/internal/testdb"
	"github.com/svcdev/svc/internal/testfactory"
)

// The runs tests start real worker and control processes against one
// database and one file object store, with short leases, a scripted model
// (llmtest) and a local stand-in of Tavily's search API as the web provider.

const (
	// leaseSeconds is worker.lease_seconds of the processes: renewed every second.
	leaseSeconds = 3
	// runWait bounds the wait for a run to finish.
	runWait = 30 * time.Second
	// tavilyKey is the web provider's credential.
	tavilyKey = "tvly-test-0123456789"
)

// tavilyStandIn answers Tavily's search API (POST {base_url}/search with a
// bearer key, JSON {"query", "max_results", "search_depth"} →
// {"results":[{"title","url","content"}]}) and counts the searches per query.
type tavilyStandIn struct {
	*httptest.Server

	mu       sync.Mutex
	searches map[string]int
}

func newTavilyStandIn(t testing.TB) *tavilyStandIn {
	s := &tavilyStandIn{searches: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *tavilyStandIn) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.Method != http.MethodPost || r.URL.Path != "/search" {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"detail":{"error":"Not Found"}}`)
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+tavilyKey {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"detail":{"error":"Unauthorized: missing or invalid API key."}}`)
		return
	}
	var body struct {
		Query      string `json:"query"`
		MaxResults int    `json:"max_results"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Query == "" {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"detail":{"error":"query is required"}}`)
		return
	}
	s.mu.Lock()
	s.searches[body.Query]++
	s.mu.Unlock()
	_ = json.NewEncoder(w).Encode(map[string]any{
		"query": body.Query, "answer": nil, "images": []any{}, "response_time": 0.42,
		"results": []any{map[string]any{
			"title": "Result for " + body.Query, "url": "https://example.com/" + url.PathEscape(body.Query),
			"content": "What the web says about " + body.Query + ".", "score": 0.9, "raw_content": nil,
		}},
	})
}

// count answers how many searches asked query.
func (s *tavilyStandIn) count(query string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.searches[query]
}

// total answers how many searches arrived.
func (s *tavilyStandIn) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.searches {
		n += c
	}
	return n
}

// runsEnv is one scenario's world: a database with a workspace, a model
// provider on a scripted model, a Tavily web provider on a stand-in, an agent
// that uses both, and the configuration of its svc processes.
type runsEnv struct {
	t       *testing.T
	pool    *pgxpool.Pool
	runs    *run.Service
	caller  *auth.Caller
	agentID string
	model   *llmtest.ChatServer
	tavily  *tavilyStandIn
	vars    map[string]string
}

// newRunsEnv prepares a scenario whose runs play script and may use
// maxAttempts charged attempts (the run's max_attempts is fixed when it is
// accepted, by the service that accepts it: here the test's).
func newRunsEnv(t *testing.T, script []llmtest.Turn, maxAttempts int) *runsEnv {
	t.Helper()
	ctx := t.Context()
	dbURL := testdb.NewURL(t)
	keyFile := newKeyRing(t)
	ring, err := keyring.Load(keyFile)
	require.NoError(t, err)
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	admin := testfactory.Bootstrap(t, pool)

	model := llmtest.NewChatServer(script)
	t.Cleanup(model.Close)
	tavily := newTavilyStandIn(t)

	prv := id.New(id.Provider)
	cfg, err := json.Marshal(map[string]string{"base_url": model.URL + "/v1"})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO provider (id, workspace_id, kind, type, name, config, created_by_id, updated_by_id)
		VALUES ($1, $2, 'model', 'openai_compatible', 'Scripted', $3, $4, $4)`, prv, admin.WorkspaceID, cfg, admin.PrincipalID)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO model (workspace_id, key, provider_id, api, model, created_by_id, updated_by_id)
		VALUES ($1, 'main', $2, 'chat_completions', 'scripted-1', $3, $3)`, admin.WorkspaceID, prv, admin.PrincipalID)
	require.NoError(t, err)

	web := id.New(id.Provider)
	webCfg, err := json.Marshal(map[string]string{"base_url": tavily.URL})
	require.NoError(t, err)
	cred, err := secret.Seal(ring, web, map[string]string{"api_key": tavilyKey})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO provider (id, workspace_id, kind, type, name, config, credential, created_by_id, updated_by_id)
		VALUES ($1, $2, 'web', 'tavily', 'Tavily', $3, $4, $5, $5)`, web, admin.WorkspaceID, webCfg, cred, admin.PrincipalID)
	require.NoError(t, err)

	reg, err := catalog.New(catalog.Options{})
	require.NoError(t, err)
	agents := agent.NewService(pool, reg, refcheck.None{})
	caller := &auth.Caller{PrincipalID: admin.PrincipalID, OrganizationID: admin.OrganizationID, WorkspaceID: admin.WorkspaceID, Role: auth.RoleAdmin}
	agentCfg, err := json.Marshal(map[string]any{"model": "main", "instructions": "Search, then answer briefly.",
		"limits": map[string]any{"max_steps": 8},
		"tools":  map[string]any{"web": map[string]any{"provider_id": web, "operations": []string{"search"}}}})
	require.NoError(t, err)
	head, err := agents.Create(ctx, caller, revision.CreateInput{Name: "searcher", Config: agentCfg})
	require.NoError(t, err)
	runs := run.NewService(pool, agents, skill.NewService(pool, refcheck.None{}), reg, run.Options{MaxAttempts: maxAttempts})

	vars := runVars(t, dbURL, keyFile)
	vars["SVC_OBJECT_STORE__URL"] = "file://" + t.TempDir()
	vars["SVC_ENDPOINT_POLICY__ALLOW_HTTP"] = "true"
	vars["SVC_ENDPOINT_POLICY__ALLOWED_PREFIXES"] = `["127.0.0.0/8"]`
	vars["SVC_ENDPOINT_POLICY__ALLOWED_PORTS"] = portOf(t, model.URL) + ", " + portOf(t, tavily.URL)
	vars["SVC_WORKER__LEASE_SECONDS"] = strconv.Itoa(leaseSeconds)
	vars["SVC_WORKER__AUTHORITY_SECONDS"] = "1"
	vars["SVC_WORKER__MAX_ATTEMPTS"] = strconv.Itoa(maxAttempts)
	vars["SVC_WORKER__DRAIN_SECONDS"] = "10"
	vars["SVC_CONTROL__SCAN_SECONDS"] = "1"
	return &runsEnv{t: t, pool: pool, runs: runs, caller: caller, agentID: head.ID, model: model, tavily: tavily, vars: vars}
}

func portOf(t testing.TB, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u.Port()
}

// start starts a process of role with the scenario's configuration plus
// extra, and waits until it is ready.
func (e *runsEnv) start(role string, extra map[string]string) *process {
	e.t.Helper()
	vars := make(map[string]string, len(e.vars)+len(extra))
	for k, v := range e.vars {
		vars[k] = v
	}
	for k, v := range extra {
		vars[k] = v
	}
	p := startSvc(e.t, vars, "run", "--role", role)
	p.waitReady()
	return p
}

// startRun starts a run on a new thread.
func (e *runsEnv) startRun(input string) run.Run {
	e.t.Helper()
	r, err := e.runs.Start(e.t.Context(), e.caller, run.StartInput{AgentID: e.agentID, Input: input})
	require.NoError(e.t, err)
	return r
}

func (e *runsEnv) getRun(runID string) run.Run {
	e.t.Helper()
	r, err := e.runs.GetRun(context.Background(), e.caller, runID)
	require.NoError(e.t, err)
	return r
}

// waitRun waits for run runID to finish and returns it.
func (e *runsEnv) waitRun(runID string) run.Run {
	e.t.Helper()
	var r run.Run
	require.Eventually(e.t, func() bool {
		r = e.getRun(runID)
		return r.Status.Finished()
	}, runWait, 20*time.Millisecond, "run %s did not finish", runID)
	return r
}

// waitFor polls cond until it holds, failing after within.
func (e *runsEnv) waitFor(what string, within time.Duration, cond func() bool) {
	e.t.Helper()
	require.Eventually(e.t, cond, within, 10*time.Millisecond, "waited %s for %s", within, what)
}

func (e *runsEnv) attempts(runID string) []run.Attempt {
	e.t.Helper()
	atts, err := e.runs.ListAttempts(context.Background(), e.caller, runID)
	require.NoError(e.t, err)
	return atts
}

func (e *runsEnv) messages(threadID string) []run.Message {
	e.t.Helper()
	msgs, err := e.runs.ListMessages(context.Background(), e.caller, threadID, 0, 1000)
	require.NoError(e.t, err)
	return msgs
}

func (e *runsEnv) events(threadID string) []run.Event {
	e.t.Helper()
	evs, err := e.runs.Events(context.Background(), e.caller, threadID, 0, 10000)
	require.NoError(e.t, err)
	return evs
}

// leaseExpiresAt reads the run's lease expiry (on the database's clock).
func (e *runsEnv) leaseExpiresAt(runID string) *time.Time {
	e.t.Helper()
	var at *time.Time
	require.NoError(e.t, e.pool.QueryRow(context.Background(), `SELECT lease_expires_at FROM run WHERE id = $1`, runID).Scan(&at))
	return at
}

// checkpointKey reads the run's latest checkpoint key.
func (e *runsEnv) checkpointKey(runID string) string {
	e.t.Helper()
	var key *string
	require.NoError(e.t, e.pool.QueryRow(context.Background(), `SELECT checkpoint_key FROM run WHERE id = $1`, runID).Scan(&key))
	require.NotNil(e.t, key, "run %s has no checkpoint", runID)
	return *key
}

// modelAsked answers how many model requests carried a conversation with
// n assistant messages: how often the script's turn n was asked for.
func (e *runsEnv) modelAsked(n int) int {
	asked := 0
	for _, req := range e.model.Requests() {
		if assistants(req) == n {
			asked++
		}
	}
	return asked
}

// assistants counts the assistant messages of req's conversation: the
// script's turn it asks for.
func assistants(req llmtest.Request) int {
	n := 0
	for _, m := range req.Messages {
		if m["role"] == "assistant" {
			n++
		}
	}
	return n
}

// freezeOutsideTransaction stops p with SIGSTOP at a moment it holds no lock
// on run runID. A process frozen inside one of its fenced transactions keeps
// the run row locked, and the lease sweep skips locked rows, so such a
// freeze would not show the takeover this test is about (docs/operations.md,
// "Runs under faults"; TestRunsWorkerFrozenInsideTransaction). It retries
// until the row is free.
func (e *runsEnv) freezeOutsideTransaction(p *process, runID string) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p.signal(syscall.SIGSTOP)
		free, err := e.rowFree(runID)
		require.NoError(e.t, err)
		if free {
			return
		}
		p.signal(syscall.SIGCONT)
		if time.Now().After(deadline) {
			e.t.Fatalf("could not freeze the worker outside a transaction on run %s", runID)
		}
		time.Sleep(7 * time.Millisecond)
	}
}

// freezeInsideTransaction stops p with SIGSTOP inside the transaction that
// finishes run runID, holding the run's row locked, as a worker paused or cut
// off from the network mid-write is. (A step's writes are single statements,
// which PostgreSQL completes without the client; finishing, handing off and
// retrying are transactions of several.) The test holds the row of p's
// attempt, so ending it, the second write of finishing, waits with the run's
// row locked; p is stopped there, the test lets go, and p's session is left
// idle inside its transaction with the run's row locked.
func (e *runsEnv) freezeInsideTransaction(p *process, runID string) {
	e.t.Helper()
	ctx := e.t.Context()
	atts := e.attempts(runID)
	require.Len(e.t, atts, 1)
	require.True(e.t, ranOn(atts[0], p))
	hold, err := e.pool.Begin(ctx)
	require.NoError(e.t, err)
	defer func() { _ = hold.Rollback(context.Background()) }()
	_, err = hold.Exec(ctx, `SELECT 1 FROM run_attempt WHERE id = $1 FOR UPDATE`, atts[0].ID)
	require.NoError(e.t, err)
	var pid int32
	e.waitFor("the worker to end its attempt", 30*time.Second, func() bool {
		err := e.pool.QueryRow(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock' AND query LIKE '%name: AttemptEnd %'`).Scan(&pid)
		if errors.Is(err, pgx.ErrNoRows) {
			return false
		}
		require.NoError(e.t, err)
		return true
	})
	p.signal(syscall.SIGSTOP)
	require.NoError(e.t, hold.Rollback(ctx))
	e.waitFor("the stopped worker's session to sit in its transaction", 10*time.Second, func() bool {
		var state string
		require.NoError(e.t, e.pool.QueryRow(ctx, `SELECT state FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&state))
		return state == "idle in transaction"
	})
	free, err := e.rowFree(runID)
	require.NoError(e.t, err)
	require.False(e.t, free, "the stopped worker holds the run's row")
}

// rowFree reports whether run runID's row can be locked at once.
func (e *runsEnv) rowFree(runID string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	_, err = tx.Exec(ctx, `SELECT 1 FROM run WHERE id = $1 FOR UPDATE NOWAIT`, runID)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "55P03" { // lock_not_available
		return false, nil
	}
	return err == nil, err
}

// workerOf is the worker id an attempt of p records: the replica id p
// announced in its "svc ready" record.
func workerOf(p *process) string {
	id, _ := p.waitReadyRecord()["replica_id"].(string)
	require.NotEmpty(p.t, id, "svc ready record without replica_id")
	return id
}

// ranOn reports whether attempt a ran on process p.
func ranOn(a run.Attempt, p *process) bool { return a.Worker == workerOf(p) }

// shape renders a thread's messages as role:content lines.
func shape(msgs []run.Message) []string {
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, m.Role+":"+m.Content)
	}
	return out
}
