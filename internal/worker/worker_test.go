package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/agent"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/llm"
	"github.com/svcdev/svc/internal/llm/llmtest"
	"github.com/svcdev/svc/internal/memory"
	"github.com/svcdev/svc/internal/model"
	"github.com/svcdev/svc/internal/objectstore"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/refcheck"
	"github.com/svcdev/svc/internal/revision"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/secret"
	"github.com/svcdev/svc/internal/skill"
	"github.com/svcdev/svc/internal/testdb"
	"github.com/svcdev/svc/internal/testfactory"
	"github.com/svcdev/svc/internal/tool"
	memorytool "github.com/svcdev/svc/internal/tool/memory"
	"github.com/svcdev/svc/internal/worker"
)

type bundle struct {
	pool    *pgxpool.Pool
	runs    *run.Service
	caller  *auth.Caller
	agentID string
	exec    *worker.Executor
	model   *llmtest.Server
	store   objectstore.Store
	calls   *atomic.Int32
	ring    *keyring.Ring
	reg     *catalog.Registry
	policy  *endpoint.Policy
}

// lookupTool is a real tool of the test: it answers the length of its word.
func lookupTool(calls *atomic.Int32) tool.Toolset {
	return func(context.Context, tool.RunContext) ([]tool.Tool, error) {
		return []tool.Tool{{
			Def: llm.Tool{Name: "lookup", Description: "Looks a word up.",
				Parameters: json.RawMessage(`{"type":"object","properties":{"word":{"type":"string"}},"required":["word"]}`)},
			Call: func(_ context.Context, args json.RawMessage) (tool.Result, error) {
				calls.Add(1)
				var in struct {
					Word string `json:"word"`
				}
				if res, ok := tool.Decode(args, &in); !ok {
					return res, nil
				}
				return tool.Result{Text: in.Word + " has " + strconv.Itoa(len(in.Word)) + " letters"}, nil
			},
		}}, nil
	}
}

// vendor is how a bundle's model is served: a scripted server speaking one
// vendor's protocol, and the provider type, API and base_url that reach it.
type vendor struct {
	name     string
	provider string
	api      string
	serve    func(script []llmtest.Turn, opts ...llmtest.Option) *llmtest.Server
	// base follows the server's URL in the provider's base_url.
	base string
	// keyed providers hold an API key, which the type requires.
	keyed bool
}

var (
	openAIChat        = vendor{name: "openai_chat", provider: "openai_compatible", api: "chat_completions", serve: llmtest.NewChatServer, base: "/v1"}
	anthropicMessages = vendor{name: "anthropic_messages", provider: "anthropic", api: "messages", serve: llmtest.NewMessagesServer, keyed: true}
	// vendors are the protocols the engine's key tests run against.
	vendors = []vendor{openAIChat, anthropicMessages}
)

// forVendors runs test as a parallel subtest for each of vendors.
func forVendors(t *testing.T, test func(t *testing.T, v vendor)) {
	t.Helper()
	for _, v := range vendors {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			test(t, v)
		})
	}
}

func setup(t testing.TB, script []llmtest.Turn, maxAttempts int, opts ...llmtest.Option) *bundle {
	t.Helper()
	return setupOn(t, openAIChat, script, maxAttempts, opts...)
}

// setupOn is setup with the model served by v's scripted server, through
// a provider of v's type.
func setupOn(t testing.TB, v vendor, script []llmtest.Turn, maxAttempts int, opts ...llmtest.Option) *bundle {
	t.Helper()
	ctx := t.Context()
	pool := testdb.New(t)
	admin := testfactory.Bootstrap(t, pool)
	path := filepath.Join(t.TempDir(), "ring.json")
	require.NoError(t, keyring.Generate(path))
	ring, err := keyring.Load(path)
	require.NoError(t, err)
	srv := v.serve(script, opts...)
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	port, err := strconv.ParseUint(u.Port(), 10, 16)
	require.NoError(t, err)
	policy := &endpoint.Policy{AllowHTTP: true, AllowedPorts: []uint16{uint16(port)},
		AllowedPrefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}

	providerID := id.New(id.Provider)
	var cred []byte
	if v.keyed {
		cred, err = secret.Seal(ring, providerID, map[string]any{"api_key": "sk-scripted"})
		require.NoError(t, err)
	}
	testfactory.Model(t, pool, admin.Owner(), &testfactory.ModelOpts{Model: "scripted-1", API: v.api, Provider: &testfactory.ProviderOpts{
		ID: providerID, Type: v.provider, Credential: cred, Config: json.RawMessage(`{"base_url":"` + srv.URL + v.base + `"}`)}})
	reg, err := catalog.New(catalog.Options{})
	require.NoError(t, err)
	agents := agent.NewService(pool, reg, refcheck.None{})
	caller := &auth.Caller{PrincipalID: admin.PrincipalID, OrganizationID: admin.OrganizationID, WorkspaceID: admin.WorkspaceID, Role: auth.RoleAdmin}
	head, err := agents.Create(ctx, caller, revision.CreateInput{Name: "helper",
		Config: json.RawMessage(`{"model":"main","instructions":"Be brief.","limits":{"max_steps":5}}`)})
	require.NoError(t, err)
	runs := run.NewService(pool, agents, skill.NewService(pool, refcheck.None{}), reg, run.Options{MaxAttempts: maxAttempts})
	store, err := objectstore.OpenFile(t.TempDir())
	require.NoError(t, err)
	calls := &atomic.Int32{}
	exec := worker.NewExecutor(readers(worker.ExecutorDeps{Runs: runs, Objects: store,
		HTTPClient: policy.HTTPClient(0), Toolsets: []tool.Toolset{lookupTool(calls)}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, pool, reg, ring))
	return &bundle{pool: pool, runs: runs, caller: caller, agentID: head.ID, exec: exec, model: srv, store: store, calls: calls,
		ring: ring, reg: reg, policy: policy}
}

// baseURL is the provider config of a model served by srv.
func baseURL(srv *llmtest.ChatServer) json.RawMessage {
	return json.RawMessage(`{"base_url":"` + srv.URL + `/v1"}`)
}

func (b *bundle) worker(name string, slots int, lease, drain time.Duration) *worker.Worker {
	return worker.New(b.pool, b.runs, b.exec, worker.Options{ID: name, Slots: slots, Lease: lease, Drain: drain, Poll: 50 * time.Millisecond},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// readers fills in d the domain services an executor reads runs'
// configurations through, over pool.
func readers(d worker.ExecutorDeps, pool *pgxpool.Pool, reg *catalog.Registry, ring *keyring.Ring) worker.ExecutorDeps {
	d.Agents = agent.NewService(pool, reg, refcheck.None{})
	d.Skills = skill.NewService(pool, refcheck.None{})
	d.Models = model.NewService(pool, reg, ring)
	return d
}

// runWorker runs, until the test ends, a worker of one slot on an executor
// of the bundle's database, runs, key ring, types and client, with the
// store, toolsets and prompt sections of d.
func (b *bundle) runWorker(t *testing.T, d worker.ExecutorDeps) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d.Runs, d.HTTPClient, d.Log = b.runs, b.policy.HTTPClient(0), log
	w := worker.New(b.pool, b.runs, worker.NewExecutor(readers(d, b.pool, b.reg, b.ring)), worker.Options{ID: "w1", Slots: 1, Lease: 30 * time.Second, Poll: 50 * time.Millisecond}, log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func (b *bundle) waitRun(t *testing.T, runID string, within time.Duration) run.Run {
	t.Helper()
	var r run.Run
	require.Eventually(t, func() bool {
		var err error
		r, err = b.runs.GetRun(context.Background(), b.caller, runID)
		require.NoError(t, err)
		return r.Status.Finished()
	}, within, 20*time.Millisecond, "run %s did not finish", runID)
	return r
}

var toolScript = []llmtest.Turn{
	{Text: "Let me look that up.", Chunks: 3, ToolCalls: []llmtest.Call{
		{Name: "lookup", Arguments: `{"word":"banana"}`}, {Name: "lookup", Arguments: `{"word":"fig"}`}}},
	{Text: "Banana has 6 letters and fig has 3.", Chunks: 4},
}

func TestRunWithToolCalls(t *testing.T) {
	t.Parallel()
	b := setup(t, toolScript, 3)
	ctx, cancel := context.WithCancel(t.Context())
	w := b.worker("w1", 4, 30*time.Second, 5*time.Second)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()

	r, err := b.runs.Start(t.Context(), b.caller, run.StartInput{AgentID: b.agentID, Input: "How long are banana and fig?"})
	require.NoError(t, err)
	got := b.waitRun(t, r.ID, 10*time.Second)
	require.Equal(t, run.StatusSucceeded, got.Status, "%+v", got.Error)
	require.EqualValues(t, 2, got.Step)
	require.EqualValues(t, 1, got.AttemptsUsed)
	require.EqualValues(t, 20, got.Usage.InputTokens)
	require.EqualValues(t, 2, b.calls.Load())

	msgs, err := b.runs.ListMessages(t.Context(), b.caller, r.ThreadID, 0, 100)
	require.NoError(t, err)
	var shape []string
	for _, m := range msgs {
		shape = append(shape, m.Role+":"+m.Content)
	}
	require.Equal(t, []string{"user:How long are banana and fig?", "assistant:Let me look that up.",
		"tool:banana has 6 letters", "tool:fig has 3 letters", "assistant:Banana has 6 letters and fig has 3."}, shape)

	evs, err := b.runs.Events(t.Context(), b.caller, r.ThreadID, 0, 1000)
	require.NoError(t, err)
	var kinds []string
	var streamed strings.Builder
	for i, e := range evs {
		require.EqualValues(t, i+1, e.Seq)
		kinds = append(kinds, e.Type)
		if e.Type == run.EventMessageDelta {
			var d run.DeltaData
			require.NoError(t, json.Unmarshal(e.Data, &d))
			streamed.WriteString(d.Text)
		}
	}
	require.Equal(t, "Let me look that up.Banana has 6 letters and fig has 3.", streamed.String(), "every delta reached the log")
	require.Contains(t, kinds, run.EventToolCall)
	require.Contains(t, kinds, run.EventToolResult)
	require.Equal(t, run.EventRunStatus, kinds[len(kinds)-1])

	// The second model call carried the tool results and the system prompt.
	reqs := b.model.Requests()
	require.Len(t, reqs, 2)
	require.Equal(t, "system", reqs[1].Messages[0]["role"])
	require.Equal(t, "tool", reqs[1].Messages[len(reqs[1].Messages)-1]["role"])
}

// TestSystemPromptCarriesMemoriesContext: an agent with a memory is asked
// with the memory listed and its records that the input's words find in
// the system prompt, after the instructions.
func TestSystemPromptCarriesMemoriesContext(t *testing.T) {
	t.Parallel()
	b := setup(t, []llmtest.Turn{{Text: "You lived in Lisbon."}}, 3)
	ctx := t.Context()
	mems := memory.NewService(b.pool, b.reg, b.ring)
	notes, err := mems.Create(ctx, b.caller, memory.CreateInput{Name: "notes", Description: "What the user told us.", Kind: memory.KindBuiltin})
	require.NoError(t, err)
	ts := memorytool.New(memorytool.Deps{Memories: mems, Registry: b.reg, Policy: b.policy})
	memTools, err := ts.Tools(ctx, b.caller.WorkspaceID, []string{notes.ID})
	require.NoError(t, err)
	for _, content := range []string{`{"memory":"notes","content":"The user lived in Lisbon for ten years."}`, `{"memory":"notes","content":"Bananas are yellow."}`} {
		res, err := memTools[2].Call(ctx, json.RawMessage(content))
		require.NoError(t, err)
		require.False(t, res.IsError, res.Text)
	}
	agents := agent.NewService(b.pool, b.reg, refcheck.Workspace{Types: b.reg})
	head, err := agents.Create(ctx, b.caller, revision.CreateInput{Name: "rememberer",
		Config: json.RawMessage(`{"model":"main","instructions":"Be brief.","memories":[{"memory_id":"` + notes.ID + `"}]}`)})
	require.NoError(t, err)
	b.runWorker(t, worker.ExecutorDeps{Objects: b.store,
		Toolsets: []tool.Toolset{ts.ForRun}, Prompts: []tool.PromptSection{ts.Prompt}})

	r, err := b.runs.Start(ctx, b.caller, run.StartInput{AgentID: head.ID, Input: "Where did I live?"})
	require.NoError(t, err)
	got := b.waitRun(t, r.ID, 10*time.Second)
	require.Equal(t, run.StatusSucceeded, got.Status, "%+v", got.Error)
	reqs := b.model.Requests()
	require.Len(t, reqs, 1)
	require.Equal(t, "system", reqs[0].Messages[0]["role"])
	system, _ := reqs[0].Messages[0]["content"].(string)
	require.True(t, strings.HasPrefix(system, "Be brief.\n\n## Memories\n"), system)
	require.Contains(t, system, `"notes" (`+notes.ID+`): What the user told us.`)
	require.Contains(t, system, "The user lived in Lisbon for ten years.")
	require.NotContains(t, system, "Bananas")
	var names []string
	for _, tl := range reqs[0].Tools {
		fn, _ := tl["function"].(map[string]any)
		name, _ := fn["name"].(string)
		names = append(names, name)
	}
	require.Contains(t, names, memorytool.SearchTool)
}

// TestToolCallWriteFailureStopsTheTools: the step's tool.call events are
// written while its tools run (slow) or with the step (a tool that answers
// at once); when that write fails (here the database refuses it), a tool
// still running is cancelled at once rather than left to run on for a step
// that cannot be recorded; a checkpoint put meanwhile is deleted, since
// nothing names it; the attempt is retried with the write's failure as its
// reason.
func TestToolCallWriteFailureStopsTheTools(t *testing.T) {
	t.Parallel()
	for _, slow := range []bool{true, false} {
		t.Run(fmt.Sprintf("slow=%v", slow), func(t *testing.T) {
			t.Parallel()
			script := []llmtest.Turn{
				{Text: "Waiting.", ToolCalls: []llmtest.Call{{Name: "wait", Arguments: `{}`}}},
				{Text: "Done."},
			}
			b := setup(t, script, 1)
			ctx := t.Context()
			_, err := b.pool.Exec(ctx, `CREATE FUNCTION refuse_tool_calls() RETURNS trigger LANGUAGE plpgsql AS $$
				BEGIN
					IF NEW.type = 'tool.call' THEN PERFORM pg_sleep(0.2); RAISE EXCEPTION 'tool calls refused by the test'; END IF;
					RETURN NEW;
				END $$;
				CREATE TRIGGER refuse_tool_calls BEFORE INSERT ON thread_event FOR EACH ROW EXECUTE FUNCTION refuse_tool_calls();`)
			require.NoError(t, err)
			cancelled := make(chan time.Duration, 1)
			waitTool := func(context.Context, tool.RunContext) ([]tool.Tool, error) {
				return []tool.Tool{{
					Def: llm.Tool{Name: "wait", Description: "Waits.", Parameters: json.RawMessage(`{"type":"object"}`)},
					Call: func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
						if !slow {
							return tool.Result{Text: "at once"}, nil
						}
						start := time.Now()
						select {
						case <-ctx.Done():
							cancelled <- time.Since(start)
							return tool.Result{}, ctx.Err()
						case <-time.After(20 * time.Second):
							return tool.Result{Text: "waited"}, nil
						}
					},
				}}, nil
			}
			store := &putRecorder{Store: b.store}
			b.runWorker(t, worker.ExecutorDeps{Objects: store, Toolsets: []tool.Toolset{waitTool}})

			r, err := b.runs.Start(ctx, b.caller, run.StartInput{AgentID: b.agentID, Input: "go"})
			require.NoError(t, err)
			if slow {
				select {
				case took := <-cancelled:
					require.Less(t, took, 5*time.Second)
				case <-time.After(15 * time.Second):
					t.Fatal("the tool ran on after its step's write failed")
				}
			}
			got := b.waitRun(t, r.ID, 10*time.Second)
			require.Equal(t, run.StatusFailed, got.Status)
			require.NotNil(t, got.Error)
			require.Contains(t, got.Error.Message, "an internal error ended the attempt")
			require.NotContains(t, got.Error.Message, "tool calls refused by the test", "the cause is the log's, not the tenant's")
			require.EqualValues(t, 0, got.Step, "the step was not recorded")
			if !slow {
				require.Len(t, store.keys(), 1, "the step's checkpoint was put while the write went on")
			}
			for _, key := range store.keys() {
				_, err := b.store.Get(ctx, key, 0, -1)
				require.ErrorIs(t, err, objectstore.ErrNotFound, "the unrecorded checkpoint %s was deleted", key)
			}
		})
	}
}

// putRecorder is a store that notes the keys put.
type putRecorder struct {
	objectstore.Store
	mu   sync.Mutex
	puts []string
}

func (p *putRecorder) Put(ctx context.Context, key string, r io.Reader, size int64, opts objectstore.PutOptions) (objectstore.Info, error) {
	p.mu.Lock()
	p.puts = append(p.puts, key)
	p.mu.Unlock()
	return p.Store.Put(ctx, key, r, size, opts)
}

func (p *putRecorder) keys() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.puts)
}

// TestResumeFromCheckpoint: an attempt whose lease expires mid-run (its
// worker stopped answering) is ended by the sweep; another worker continues
// from the last checkpoint: the model is not asked the first step again.
func TestResumeFromCheckpoint(t *testing.T) {
	t.Parallel()
	script := []llmtest.Turn{
		{Text: "Step one.", ToolCalls: []llmtest.Call{{Name: "lookup", Arguments: `{"word":"kiwi"}`}}},
		{Text: "Step two, slowly.", Chunks: 20, ChunkDelay: 100 * time.Millisecond, ToolCalls: []llmtest.Call{{Name: "lookup", Arguments: `{"word":"plum"}`}}},
		{Text: "Done."},
	}
	b := setup(t, script, 3)
	r, err := b.runs.Start(t.Context(), b.caller, run.StartInput{AgentID: b.agentID, Input: "go"})
	require.NoError(t, err)

	// A first worker runs step 1, then is cut off in step 2 without a word.
	ctx1, cancel1 := context.WithCancel(t.Context())
	w1 := b.worker("w1", 1, 2*time.Second, 0)
	done1 := make(chan error, 1)
	go func() { done1 <- w1.Run(ctx1) }()
	require.Eventually(t, func() bool {
		got, err := b.runs.GetRun(t.Context(), b.caller, r.ID)
		require.NoError(t, err)
		return got.Step >= 1
	}, 10*time.Second, 20*time.Millisecond)
	// Simulate a crash: the lease is backdated so it is already expired, as
	// if the worker had died; its late writes are fenced out.
	_, err = b.pool.Exec(t.Context(), `UPDATE run SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, r.ID)
	require.NoError(t, err)
	n, err := b.runs.ExpireLeases(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	cancel1()
	<-done1

	ctx2, cancel2 := context.WithCancel(t.Context())
	w2 := b.worker("w2", 1, 30*time.Second, time.Second)
	done2 := make(chan error, 1)
	go func() { done2 <- w2.Run(ctx2) }()
	defer func() { cancel2(); <-done2 }()
	got := b.waitRun(t, r.ID, 20*time.Second)
	require.Equal(t, run.StatusSucceeded, got.Status, "%+v", got.Error)
	require.EqualValues(t, 3, got.Step)
	require.EqualValues(t, 2, got.AttemptsUsed, "the expired attempt was charged")

	// The first step's model call was never repeated: each conversation
	// state (by its count of assistant messages) was asked at most... once
	// for step one.
	firsts := 0
	for _, req := range b.model.Requests() {
		assistants := 0
		for _, m := range req.Messages {
			if m["role"] == "assistant" {
				assistants++
			}
		}
		if assistants == 0 {
			firsts++
		}
	}
	require.Equal(t, 1, firsts, "step one ran once: the second attempt continued from its checkpoint")
	msgs, err := b.runs.ListMessages(t.Context(), b.caller, r.ThreadID, 0, 100)
	require.NoError(t, err)
	require.Len(t, msgs, 6, "user, (assistant, tool) x2, assistant: no step recorded twice")
	atts, err := b.runs.ListAttempts(t.Context(), b.caller, r.ID)
	require.NoError(t, err)
	require.Len(t, atts, 2)
	require.Equal(t, "expired", atts[0].Status)
	require.EqualValues(t, 1, atts[1].FromStep)
}

// TestResumeAfterFinalStep: a worker records the final answer but is cut
// off before it finishes the run; the next attempt finishes it from that
// checkpoint without asking the model again.
func TestResumeAfterFinalStep(t *testing.T) {
	t.Parallel()
	script := []llmtest.Turn{
		// Slow, so the test holds the attempt's row before the run ends.
		{Text: "Step one, slowly.", Chunks: 10, ChunkDelay: 50 * time.Millisecond, ToolCalls: []llmtest.Call{{Name: "lookup", Arguments: `{"word":"kiwi"}`}}},
		{Text: "Kiwi has 4 letters."},
	}
	b := setup(t, script, 3)
	ctx := t.Context()
	r, err := b.runs.Start(ctx, b.caller, run.StartInput{AgentID: b.agentID, Input: "go"})
	require.NoError(t, err)

	// The first worker's attempt row is held, so ending the attempt (the
	// first write of finishing the run) waits; the worker is cut off there.
	ctx1, cancel1 := context.WithCancel(ctx)
	w1 := b.worker("w1", 1, 30*time.Second, 0)
	done1 := make(chan error, 1)
	go func() { done1 <- w1.Run(ctx1) }()
	var attemptID string
	require.Eventually(t, func() bool {
		err := b.pool.QueryRow(ctx, `SELECT id FROM run_attempt WHERE run_id = $1`, r.ID).Scan(&attemptID)
		return err == nil
	}, 10*time.Second, 5*time.Millisecond)
	// Connections of the test's own: the worker's, blocked, may take all of
	// the pool's.
	conn := func() *pgx.Conn {
		c, err := pgx.Connect(ctx, b.pool.Config().ConnString())
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close(context.Background()) })
		return c
	}
	hold, err := conn().Begin(ctx)
	require.NoError(t, err)
	_, err = hold.Exec(ctx, `SELECT 1 FROM run_attempt WHERE id = $1 FOR UPDATE`, attemptID)
	require.NoError(t, err)
	probe := conn()
	var waiting []int32
	require.Eventually(t, func() bool {
		rows, err := probe.Query(ctx, `SELECT pid FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%name: AttemptEnd %'`)
		require.NoError(t, err)
		waiting, err = pgx.CollectRows(rows, pgx.RowTo[int32])
		require.NoError(t, err)
		return len(waiting) == 1
	}, 10*time.Second, 5*time.Millisecond, "the worker reached the end of the run")
	// Its session dies there, and then the worker.
	_, err = probe.Exec(ctx, `SELECT pg_terminate_backend($1)`, waiting[0])
	require.NoError(t, err)
	require.NoError(t, hold.Rollback(ctx))
	cancel1()
	<-done1
	got, err := b.runs.GetRun(ctx, b.caller, r.ID)
	require.NoError(t, err)
	require.Equal(t, run.StatusRunning, got.Status)
	require.EqualValues(t, 2, got.Step, "the final step was recorded")
	asked := len(b.model.Requests())
	require.Equal(t, 2, asked)

	_, err = b.pool.Exec(ctx, `UPDATE run SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, r.ID)
	require.NoError(t, err)
	n, err := b.runs.ExpireLeases(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	ctx2, cancel2 := context.WithCancel(ctx)
	w2 := b.worker("w2", 1, 30*time.Second, time.Second)
	done2 := make(chan error, 1)
	go func() { done2 <- w2.Run(ctx2) }()
	defer func() { cancel2(); <-done2 }()
	got = b.waitRun(t, r.ID, 20*time.Second)
	require.Equal(t, run.StatusSucceeded, got.Status, "%+v", got.Error)
	require.EqualValues(t, 2, got.Step)
	require.Len(t, b.model.Requests(), asked, "the model was not asked again")
	msgs, err := b.runs.ListMessages(ctx, b.caller, r.ThreadID, 0, 100)
	require.NoError(t, err)
	require.Len(t, msgs, 4, "user, assistant, tool, assistant: nothing twice")
	require.Equal(t, "Kiwi has 4 letters.", msgs[3].Content)
	atts, err := b.runs.ListAttempts(ctx, b.caller, r.ID)
	require.NoError(t, err)
	require.Len(t, atts, 2)
	require.Equal(t, "expired", atts[0].Status)
	require.Equal(t, "completed", atts[1].Status)
	require.EqualValues(t, 2, atts[1].FromStep)
}

// TestDrainHandsOffUncharged: a stopping worker lets the attempt finish its
// step and hands the run off without charging it; the next worker finishes.
func TestDrainHandsOffUncharged(t *testing.T) {
	t.Parallel()
	script := []llmtest.Turn{
		{Text: "Working on it, slowly.", Chunks: 10, ChunkDelay: 50 * time.Millisecond, ToolCalls: []llmtest.Call{{Name: "lookup", Arguments: `{"word":"pear"}`}}},
		{Text: "Done."},
	}
	b := setup(t, script, 1)
	r, err := b.runs.Start(t.Context(), b.caller, run.StartInput{AgentID: b.agentID, Input: "go"})
	require.NoError(t, err)
	ctx1, cancel1 := context.WithCancel(t.Context())
	w1 := b.worker("w1", 1, 30*time.Second, 10*time.Second)
	done1 := make(chan error, 1)
	go func() { done1 <- w1.Run(ctx1) }()
	require.Eventually(t, func() bool { return len(b.model.Requests()) == 1 }, 5*time.Second, 10*time.Millisecond)
	cancel1() // SIGTERM while the model is answering
	<-done1
	got, err := b.runs.GetRun(t.Context(), b.caller, r.ID)
	require.NoError(t, err)
	require.Equal(t, run.StatusRunning, got.Status)
	require.EqualValues(t, 1, got.Step, "the step under way was finished and recorded")
	require.EqualValues(t, 0, got.AttemptsUsed, "a hand-off is not charged")

	ctx2, cancel2 := context.WithCancel(t.Context())
	w2 := b.worker("w2", 1, 30*time.Second, time.Second)
	done2 := make(chan error, 1)
	go func() { done2 <- w2.Run(ctx2) }()
	defer func() { cancel2(); <-done2 }()
	got = b.waitRun(t, r.ID, 10*time.Second)
	require.Equal(t, run.StatusSucceeded, got.Status, "%+v", got.Error)
	require.EqualValues(t, 1, got.AttemptsUsed, "max_attempts 1 was enough: the hand-off cost nothing")
	atts, err := b.runs.ListAttempts(t.Context(), b.caller, r.ID)
	require.NoError(t, err)
	require.Equal(t, "handed_off", atts[0].Status)
	require.False(t, atts[0].Charged)
}

func TestCancelRunningRun(t *testing.T) {
	t.Parallel()
	script := []llmtest.Turn{{Text: strings.Repeat("word ", 200), Chunks: 200, ChunkDelay: 20 * time.Millisecond}}
	b := setup(t, script, 3)
	ctx, cancel := context.WithCancel(t.Context())
	w := b.worker("w1", 2, 30*time.Second, time.Second)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	r, err := b.runs.Start(t.Context(), b.caller, run.StartInput{AgentID: b.agentID, Input: "talk"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return w.Active() == 1 }, 5*time.Second, 10*time.Millisecond)
	asked := time.Now()
	_, err = b.runs.Cancel(t.Context(), b.caller, r.ID)
	require.NoError(t, err)
	got := b.waitRun(t, r.ID, 5*time.Second)
	require.Equal(t, run.StatusCancelled, got.Status)
	require.Less(t, time.Since(asked), 2*time.Second, "the worker heard the cancel at once, not at its next renewal")
}

func TestModelFailureFailsRun(t *testing.T) {
	t.Parallel()
	b := setup(t, []llmtest.Turn{{Status: 400}}, 3)
	ctx, cancel := context.WithCancel(t.Context())
	w := b.worker("w1", 1, 30*time.Second, time.Second)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	r, err := b.runs.Start(t.Context(), b.caller, run.StartInput{AgentID: b.agentID, Input: "hi"})
	require.NoError(t, err)
	got := b.waitRun(t, r.ID, 10*time.Second)
	require.Equal(t, run.StatusFailed, got.Status)
	require.Equal(t, run.ErrCodeModel, got.Error.Code)
	require.NotContains(t, got.Error.Message, b.model.URL, "no vendor address in the error")
}
