package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apitest"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/llm/llmtest"
	"github.com/svcdev/svc/internal/testfactory"
)

// TestRunEndToEndOverSSE: a process of role all takes a run posted through
// the API, its worker calls the model (a local server speaking the chat
// completions protocol) and executes the tool calls in a local environment;
// the thread's stream carries every event in order, and a client that
// reconnects with Last-Event-ID gets exactly the events after it.
func TestRunEndToEndOverSSE(t *testing.T) {
	t.Parallel()
	b, agentID := setupE2E(t, []llmtest.Turn{
		{Text: "I will count the files.", Chunks: 4, ChunkDelay: 20 * time.Millisecond,
			ToolCalls: []llmtest.Call{{Name: "run_command", Arguments: `{"command":"echo one > a.txt; echo two > b.txt; ls | wc -l"}`}}},
		{Text: "There are 2 files.", Chunks: 3, ChunkDelay: 20 * time.Millisecond},
	}, nil)
	ag := map[string]any{"id": agentID}

	r := b.must(t, http.StatusAccepted, http.MethodPost, "/api/v1/runs", map[string]any{"agent_id": ag["id"], "input": "How many files will you make?"})
	threadID := r["thread_id"].(string)
	s := b.openStream(t, "/api/v1/threads/"+threadID+"/stream")
	defer s.close()

	var all []map[string]any
	var text strings.Builder
	for done := false; !done; {
		ev := s.expect(t, len(all)+1, len(all)+1)[0]
		all = append(all, ev)
		data := ev["data"].(map[string]any)
		switch ev["type"] {
		case "message.delta":
			text.WriteString(data["text"].(string))
		case "run.status":
			done = data["status"] == "succeeded" || data["status"] == "failed"
		}
	}
	last := all[len(all)-1]["data"].(map[string]any)
	require.Equal(t, "succeeded", last["status"], "%v", all)
	require.Equal(t, "I will count the files.There are 2 files.", text.String())
	var types []string
	for _, ev := range all {
		types = append(types, ev["type"].(string))
	}
	require.Contains(t, types, "tool.call")
	require.Contains(t, types, "tool.result")
	for _, ev := range all {
		if ev["type"] == "tool.result" {
			require.Contains(t, ev["data"].(map[string]any)["content"], `"stdout":"2\n"`)
		}
	}

	// Reconnect after the third event: exactly the rest, in order.
	again := b.openStream(t, "/api/v1/threads/"+threadID+"/stream", "Last-Event-ID", "3")
	defer again.close()
	rest := again.expect(t, 4, len(all))
	for i, ev := range rest {
		want, _ := json.Marshal(all[i+3])
		got, _ := json.Marshal(ev)
		require.JSONEq(t, string(want), string(got))
	}

	run := b.must(t, http.StatusOK, http.MethodGet, "/api/v1/runs/"+r["id"].(string), nil)
	require.Equal(t, "succeeded", run["status"])
	require.EqualValues(t, 1, run["attempts_used"])
	msgs := b.must(t, http.StatusOK, http.MethodGet, "/api/v1/threads/"+threadID+"/messages", nil)
	require.Len(t, msgs["items"], 4)
	atts := b.must(t, http.StatusOK, http.MethodGet, "/api/v1/runs/"+r["id"].(string)+"/attempts", nil)
	require.Len(t, atts["items"], 1)
	// The attempt names the worker by its opaque replica id, never the host.
	worker := atts["items"].([]any)[0].(map[string]any)["worker"].(string)
	require.Equal(t, b.h.App.ReplicaID, worker)
	require.Regexp(t, `^rep_[0-9a-z]{26}$`, worker)
	host, err := os.Hostname()
	require.NoError(t, err)
	require.NotContains(t, worker, host)
}

// setupE2E starts a process of role all (with configure applied) whose
// model is a local server playing script, and creates the provider, model,
// a local environment template and an agent using them through the API.
func setupE2E(t *testing.T, script []llmtest.Turn, configure func(*config.Config)) (*runsBundle, string) {
	t.Helper()
	model := llmtest.NewChatServer(script)
	t.Cleanup(model.Close)
	u, err := url.Parse(model.URL)
	require.NoError(t, err)
	port, err := strconv.Atoi(u.Port())
	require.NoError(t, err)
	workdir := t.TempDir()
	h := apitest.Start(t, apitest.Options{Configure: func(c *config.Config) {
		c.EndpointPolicy.AllowHTTP = true
		c.EndpointPolicy.AllowedPrefixes = []string{"127.0.0.0/8"}
		c.EndpointPolicy.AllowedPorts = []int{port}
		c.Environments.LocalEnabled = true
		if configure != nil {
			configure(c)
		}
	}})
	admin := testfactory.Bootstrap(t, h.App.Pool)
	b := &runsBundle{agentsBundle: &agentsBundle{modelsBundle: &modelsBundle{providersBundle: &providersBundle{h: h, admin: admin, api: h.Client(t, admin.APIKey)}}}}
	prv := b.must(t, http.StatusCreated, http.MethodPost, "/api/v1/model-providers", map[string]any{
		"name": "local model", "type": "openai_compatible", "config": map[string]any{"base_url": model.URL + "/v1"}})
	b.must(t, http.StatusCreated, http.MethodPost, "/api/v1/models", map[string]any{
		"key": "main", "provider_id": prv["id"], "api": "chat_completions", "model": "scripted-1"})
	envPrv := b.must(t, http.StatusCreated, http.MethodPost, "/api/v1/environment-providers", map[string]any{"name": "this host", "type": "local"})
	tpl := b.must(t, http.StatusCreated, http.MethodPost, "/api/v1/environment-templates", map[string]any{
		"name": "scratch", "environment_provider_id": envPrv["id"], "config": map[string]any{"workdir": workdir}})
	ag := b.must(t, http.StatusCreated, http.MethodPost, "/api/v1/agents", map[string]any{"name": "counter",
		"config": map[string]any{"model": "main", "instructions": "Count things.", "tools": map[string]any{"environment": map[string]any{"template_id": tpl["id"]}}}})
	return b, ag["id"].(string)
}

// TestRunGoesOnWhileRedisIsLost: Redis is cut in the middle of a run; the
// run finishes, /readyz stays ready with degraded ["redis"], and the
// thread's history in PostgreSQL is complete and gap-free.
func TestRunGoesOnWhileRedisIsLost(t *testing.T) {
	t.Parallel()
	proxy, redisURL := apitest.ProxyURL(t, apitest.RedisURL(t))
	text := strings.Repeat("tick ", 40)
	b, agentID := setupE2E(t, []llmtest.Turn{
		{Text: "Working.", ToolCalls: []llmtest.Call{{Name: "run_command", Arguments: `{"command":"echo done"}`}}},
		{Text: text, Chunks: 40, ChunkDelay: 50 * time.Millisecond},
	}, func(c *config.Config) { c.Redis.URL = redisURL })
	r := b.must(t, http.StatusAccepted, http.MethodPost, "/api/v1/runs", map[string]any{"agent_id": agentID, "input": "go"})
	runPath := "/api/v1/runs/" + r["id"].(string)
	require.Eventually(t, func() bool {
		return b.must(t, http.StatusOK, http.MethodGet, runPath, nil)["status"] == "running"
	}, 10*time.Second, 20*time.Millisecond)
	proxy.Cut()
	require.Eventually(t, func() bool {
		return b.must(t, http.StatusOK, http.MethodGet, runPath, nil)["status"] == "succeeded"
	}, 20*time.Second, 50*time.Millisecond, "the run finished without Redis")
	require.Eventually(t, func() bool {
		resp := b.h.Get(t, "/readyz")
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		deg, _ := body["degraded"].([]any)
		return resp.StatusCode == http.StatusOK && len(deg) == 1 && deg[0] == "redis"
	}, 10*time.Second, 100*time.Millisecond, "/readyz: ready, degraded redis")

	page := b.must(t, http.StatusOK, http.MethodGet, "/api/v1/threads/"+r["thread_id"].(string)+"/events?limit=1000", nil)
	var streamed strings.Builder
	for i, item := range page["items"].([]any) {
		ev := item.(map[string]any)
		require.EqualValues(t, i+1, ev["seq"], "gap-free")
		if ev["type"] == "message.delta" {
			streamed.WriteString(ev["data"].(map[string]any)["text"].(string))
		}
	}
	require.Equal(t, "Working."+text, streamed.String(), "every delta is in the history")
	proxy.Restore()
}
