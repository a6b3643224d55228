package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/testdb"
)

// The first run of README.md's "Try it": the demo model (scripts/demomodel)
// and `svc run` with the development configuration scripts/run.sh writes,
// driven by the README's own commands.

// startDemoModel builds and starts scripts/demomodel on a port of the
// kernel's choice and returns its base URL (".../v1") and its log.
func startDemoModel(t *testing.T) (string, *lockedBuffer) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "demomodel")
	build := exec.Command("go", "build", "-o", bin, "../../scripts/demomodel")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "build the demo model: %s", out)

	ctx, cancel := context.WithTimeout(context.Background(), processTimeout)
	cmd := exec.CommandContext(ctx, bin, "-addr", "127.0.0.1:0", "-chunk-delay", "1ms")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	log := &lockedBuffer{}
	cmd.Stderr = log
	cmd.WaitDelay = 2 * time.Second
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		cancel()
		if t.Failed() {
			t.Logf("demo model log:\n%s", log.String())
		}
	})
	base, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "the demo model prints its base URL first")
	base = strings.TrimSpace(base)
	require.Regexp(t, `^http://127\.0\.0\.1:[0-9]+/v1$`, base)
	return base, log
}

// devPolicy is the [endpoint_policy] table scripts/run.sh writes into the
// development configuration.
func devPolicy(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../scripts/run.sh")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?s)\nDEV_POLICY='(\[endpoint_policy\]\n.*?)'\n`).FindSubmatch(b)
	require.NotNil(t, m, "scripts/run.sh defines DEV_POLICY")
	return string(m[1])
}

// tryIt is README.md's "Try it" section.
func tryIt(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	s := string(b)
	start := strings.Index(s, "\n## Try it\n")
	require.GreaterOrEqual(t, start, 0)
	end := strings.Index(s[start:], "\n## Console\n")
	require.Greater(t, end, 0)
	return s[start : start+end]
}

// sseEvent is one frame of a thread's stream.
type sseEvent struct {
	ID   int
	Type string
	Data struct {
		Seq  int             `json:"seq"`
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
}

// walkthrough is the README's flow against one process.
type walkthrough struct {
	t      *testing.T
	readme string
	base   string
	key    string
	vars   map[string]string // the README's shell variables
}

// body is the README's request body tmpl, in which `'"$NAME"'` (the shell's
// way of putting a variable into a single-quoted string) stands for a
// variable, with the variables filled in. The README must show it as written.
func (w *walkthrough) body(tmpl string) string {
	w.t.Helper()
	require.Contains(w.t, w.readme, "-d '"+tmpl+"'", "README.md's \"Try it\" sends this body")
	out := tmpl
	for name, v := range w.vars {
		out = strings.ReplaceAll(out, `'"$`+name+`"'`, v)
	}
	require.NotContains(w.t, out, `'"$`, "every variable of %s is known", tmpl)
	return out
}

// call sends an authenticated request and decodes the JSON answer into out
// (when not nil), requiring status want.
func (w *walkthrough) call(method, path, body string, want int, out any) {
	w.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, w.base+path, r)
	require.NoError(w.t, err)
	req.Header.Set("Authorization", "Bearer "+w.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	require.NoError(w.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(w.t, err)
	require.Equal(w.t, want, resp.StatusCode, "%s %s: %s", method, path, b)
	if out != nil {
		require.NoError(w.t, json.Unmarshal(b, out), "%s %s: %s", method, path, b)
	}
}

// create POSTs the README's body tmpl to path and returns the new id.
func (w *walkthrough) create(path, tmpl string) string {
	w.t.Helper()
	var out struct {
		ID string `json:"id"`
	}
	w.call(http.MethodPost, path, w.body(tmpl), http.StatusCreated, &out)
	require.NotEmpty(w.t, out.ID)
	return out.ID
}

// stream reads the thread's stream after event after until a run of it
// ends, and returns the events.
func (w *walkthrough) stream(thread string, after int) []sseEvent {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runWait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.base+"/api/v1/threads/"+thread+"/stream", nil)
	require.NoError(w.t, err)
	req.Header.Set("Authorization", "Bearer "+w.key)
	req.Header.Set("Last-Event-ID", strconv.Itoa(after))
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	require.NoError(w.t, err)
	defer resp.Body.Close()
	require.Equal(w.t, http.StatusOK, resp.StatusCode)
	require.Equal(w.t, "text/event-stream", strings.Split(resp.Header.Get("Content-Type"), ";")[0])

	var events []sseEvent
	var ev sseEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			ev.ID, err = strconv.Atoi(strings.TrimPrefix(line, "id: "))
			require.NoError(w.t, err)
		case strings.HasPrefix(line, "event: "):
			ev.Type = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			require.NoError(w.t, json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev.Data), line)
		case line == "" && ev.Type != "":
			events = append(events, ev)
			if ev.Type == "run.status" {
				var st struct {
					Status string `json:"status"`
				}
				require.NoError(w.t, json.Unmarshal(ev.Data.Data, &st))
				switch st.Status {
				case "succeeded":
					return events
				case "failed", "cancelled":
					w.t.Fatalf("the run %s: %s", st.Status, ev.Data.Data)
				}
			}
			ev = sseEvent{}
		}
	}
	w.t.Fatalf("the stream ended before the run did (%v); events: %v", sc.Err(), events)
	return nil
}

// toolCall is a tool.call or tool.result event's data.
type toolCall struct {
	Name      string `json:"name"`
	CallID    string `json:"call_id"`
	Arguments string `json:"arguments"`
	Content   string `json:"content"`
	IsError   bool   `json:"is_error"`
}

// answer checks a run's events: it starts, the demo model calls tool and
// streams an answer that quotes the tool's result, and it succeeds. It
// returns the call and the result.
func (w *walkthrough) answer(events []sseEvent, tool string) (call, result toolCall) {
	w.t.Helper()
	var types []string
	var deltas []string
	var final struct {
		Content string `json:"content"`
	}
	for _, ev := range events {
		require.Equal(w.t, ev.ID, ev.Data.Seq)
		require.Equal(w.t, ev.Type, ev.Data.Type)
		types = append(types, ev.Type)
		switch ev.Type {
		case "tool.call":
			require.NoError(w.t, json.Unmarshal(ev.Data.Data, &call))
			deltas = nil
		case "tool.result":
			require.NoError(w.t, json.Unmarshal(ev.Data.Data, &result))
		case "message.delta":
			var d struct {
				Text string `json:"text"`
			}
			require.NoError(w.t, json.Unmarshal(ev.Data.Data, &d))
			deltas = append(deltas, d.Text)
		case "message.completed":
			require.NoError(w.t, json.Unmarshal(ev.Data.Data, &final))
		}
	}
	require.Equal(w.t, "run.status", types[0])
	require.Equal(w.t, "run.status", types[len(types)-1])
	require.Contains(w.t, types, "tool.call")
	require.Contains(w.t, types, "tool.result")
	require.Equal(w.t, tool, call.Name, "%v", types)
	require.Equal(w.t, call.CallID, result.CallID)
	require.False(w.t, result.IsError, result.Content)
	require.NotEmpty(w.t, deltas, "the answer is streamed")
	require.Equal(w.t, strings.Join(deltas, ""), final.Content, "the streamed pieces make the answer")
	require.True(w.t, strings.HasPrefix(final.Content, "I called "+tool+" and it answered: "+result.Content), final.Content)
	return call, result
}

// TestFirstRunWalkthrough walks README.md's "Try it" as a newcomer does with
// `make run`: the demo model beside `svc run` in the development
// configuration, the administrator made with --password-stdin, then the
// README's provider, model, memory, agent and run, read from the thread's
// stream to the final answer, tool call included, with the usage the demo
// model counted.
func TestFirstRunWalkthrough(t *testing.T) {
	t.Parallel()
	demo, demoLog := startDemoModel(t)
	dir := t.TempDir()
	keyFile := newKeyRing(t)
	dbURL := testdb.NewURL(t)
	config := filepath.Join(dir, "config.toml")
	require.NoError(t, os.WriteFile(config, []byte(fmt.Sprintf(`
[database]
url = %q

[redis]
url = %q
key_prefix = "svc_firstrun:"

[object_store]
url = "file://%s/objects"

[encryption]
key_file = %q

[environments]
local_enabled = true

%s

[log]
format = "json"
`, dbURL, redisURL(t), dir, keyFile, devPolicy(t))), 0o600))

	// make run: migrate, then run with the address it picked.
	r := runSvc(t, nil, "--config", config, "migrate")
	require.Equal(t, 0, r.code, "%s", r)
	p := startSvc(t, map[string]string{"SVC_SERVER__LISTEN": "127.0.0.1:0"}, "--config", config, "run", "--role", "all")
	base := "http://" + p.waitReady()

	// Bootstrap without a terminal.
	readme := tryIt(t)
	require.Contains(t, readme, "bootstrap --email you@example.com --password-stdin")
	r = runSvcInput(t, nil, "a long development password\n", "--config", config, "bootstrap", "--email", "you@example.com", "--password-stdin")
	require.Equal(t, 0, r.code, "%s", r)
	var boot bootstrapReport
	decodeOne(t, r, &boot)

	w := &walkthrough{t: t, readme: readme, base: base, key: boot.APIKey, vars: map[string]string{"DEMO": demo}}
	w.vars["PRV"] = w.create("/api/v1/model-providers", `{"type":"openai_compatible","name":"demo","config":{"base_url":"'"$DEMO"'"}}`)
	var probe struct {
		Result  string  `json:"result"`
		Message *string `json:"message"`
	}
	w.call(http.MethodPost, "/api/v1/model-providers/"+w.vars["PRV"]+"/test", "", http.StatusOK, &probe)
	require.Equal(t, "succeeded", probe.Result, "%v", probe.Message)

	w.call(http.MethodPost, "/api/v1/models", w.body(`{"key":"demo","provider_id":"'"$PRV"'","api":"chat_completions","model":"svc-demo"}`), http.StatusCreated, nil)
	w.vars["MEM"] = w.create("/api/v1/memories", `{"name":"notes","kind":"builtin"}`)
	w.vars["AGENT"] = w.create("/api/v1/agents",
		`{"name":"helper","labels":{"team":"demo"},"config":{"model":"demo","instructions":"Answer briefly.","memories":[{"memory_id":"'"$MEM"'"}]}}`)

	// The run, streamed to its answer.
	var run struct {
		ID       string `json:"id"`
		ThreadID string `json:"thread_id"`
		Status   string `json:"status"`
	}
	w.call(http.MethodPost, "/api/v1/runs", w.body(`{"agent_id":"'"$AGENT"'","input":"Use memory_write to note \"the demo model runs offline\"."}`),
		http.StatusAccepted, &run)
	require.Equal(t, "accepted", run.Status)
	events := w.stream(run.ThreadID, 0)
	call, result := w.answer(events, "memory_write")
	require.JSONEq(t, fmt.Sprintf(`{"content":"the demo model runs offline","memory":%q}`, w.vars["MEM"]), call.Arguments)
	require.Regexp(t, fmt.Sprintf(`^\{"memory":"%s","id":"mrec_[0-9a-z]{26}"\}$`, w.vars["MEM"]), result.Content)

	// The usage is what the demo model counted for the run's two requests.
	var done struct {
		Status string `json:"status"`
		Usage  struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
	}
	w.call(http.MethodGet, "/api/v1/runs/"+run.ID, "", http.StatusOK, &done)
	require.Equal(t, "succeeded", done.Status)
	prompt, completion := countedUsage(t, demoLog.String())
	require.Equal(t, [2]int{prompt, completion}, [2]int{done.Usage.InputTokens, done.Usage.OutputTokens}, demoLog.String())
	require.Positive(t, prompt)
	require.Positive(t, completion)

	// A follow-up on the thread finds the record.
	require.Contains(t, readme, `-H "Last-Event-ID: $LAST"`)
	w.call(http.MethodPost, "/api/v1/threads/"+run.ThreadID+"/inputs",
		w.body(`{"content":"What do you know about \"offline\"? Use memory_search."}`), http.StatusAccepted, nil)
	_, result = w.answer(w.stream(run.ThreadID, events[len(events)-1].ID), "memory_search")
	require.Contains(t, result.Content, `"content":"the demo model runs offline"`)

	var records struct {
		Items []struct {
			Content string `json:"content"`
		} `json:"items"`
	}
	require.Contains(t, readme, `api "$BASE/api/v1/memories/$MEM/records?q=offline"`)
	w.call(http.MethodGet, "/api/v1/memories/"+w.vars["MEM"]+"/records?q=offline", "", http.StatusOK, &records)
	require.Len(t, records.Items, 1)
	require.Equal(t, "the demo model runs offline", records.Items[0].Content)
}

// countedUsage adds up the tokens the demo model's log says it counted.
func countedUsage(t *testing.T, log string) (prompt, completion int) {
	t.Helper()
	re := regexp.MustCompile(`\(prompt ([0-9]+), completion ([0-9]+) tokens\)`)
	for _, m := range re.FindAllStringSubmatch(log, -1) {
		p, _ := strconv.Atoi(m[1])
		c, _ := strconv.Atoi(m[2])
		prompt, completion = prompt+p, completion+c
	}
	return prompt, completion
}

// TestTwoProcessesOnOneAddress: a worker started on the address a control
// process holds refuses to start, naming the key and its variable.
func TestTwoProcessesOnOneAddress(t *testing.T) {
	t.Parallel()
	url := testdb.NewURL(t)
	keyFile := newKeyRing(t)
	control := runVars(t, url, keyFile)
	control["SVC_OBJECT_STORE__URL"] = "file://" + t.TempDir()
	addr := startSvc(t, control, "run", "--role", "control").waitReady()

	worker := runVars(t, url, keyFile)
	worker["SVC_SERVER__LISTEN"] = addr
	r := runSvcWithin(t, refuseTimeout, worker, "run", "--role", "worker")
	require.Equal(t, 1, r.code, "%s", r)
	require.Contains(t, r.stderr, fmt.Sprintf(`listen on server.listen %q: another process holds this address`, addr), "%s", r)
	require.Contains(t, r.stderr, "needs its own server.listen", "%s", r)
	require.Contains(t, r.stderr, "SVC_SERVER__LISTEN=127.0.0.1:8081", "%s", r)
}
