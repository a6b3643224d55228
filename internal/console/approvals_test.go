package console_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/llm/llmtest"
	"github.com/svcdev/svc/internal/memory"
	"github.com/svcdev/svc/internal/revision"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/testfactory"
)

// setupAsking starts a process whose agent "careful" must ask before it
// writes to its memory "notes"; the scripted model asks for one write and
// then answers.
func setupAsking(t *testing.T, answer string) (*testBundle, *llmtest.ChatServer, string) {
	t.Helper()
	model := llmtest.NewChatServer([]llmtest.Turn{
		{Text: "I will note it.", ToolCalls: []llmtest.Call{{Name: "memory_write", Arguments: `{"memory":"notes","content":"Lisbon <b>ten</b> years"}`}}},
		{Text: answer, Chunks: 3, ChunkDelay: 20 * time.Millisecond},
	})
	t.Cleanup(model.Close)
	b := setup(t, allowLoopback(t, model.URL))
	testfactory.Model(t, b.h.App.Pool, b.admin.Owner(), &testfactory.ModelOpts{Model: "scripted-1",
		Provider: &testfactory.ProviderOpts{Config: json.RawMessage(`{"base_url":"` + model.URL + `/v1"}`)}})
	notes, err := b.h.App.Memories.Create(t.Context(), b.admin.Caller("admin"), memory.CreateInput{Name: "notes", Kind: memory.KindBuiltin})
	require.NoError(t, err)
	ag, err := b.h.App.Agents.Create(t.Context(), b.admin.Caller("admin"), revision.CreateInput{Name: "careful",
		Config: json.RawMessage(`{"model":"main","memories":[{"memory_id":"` + notes.ID + `"}],"tool_policy":{"tools":{"memory_write":"ask"}}}`)})
	require.NoError(t, err)
	return b, model, ag.ID
}

// A waiting run is in the inbox and on its page with the call's arguments;
// a viewer sees it but no buttons and may not decide; a denial with a
// reason reaches the model, and the run goes on.
func TestApprovalsInboxAndDenial(t *testing.T) {
	t.Parallel()
	b, model, agentID := setupAsking(t, "Understood, not noted.")
	r := b.startRun(t, agentID, "I lived in Lisbon.")
	require.Eventually(t, func() bool {
		got, err := b.h.App.Runs.GetRun(t.Context(), b.admin.Caller("admin"), r.ID)
		require.NoError(t, err)
		return got.Status == run.StatusWaiting
	}, 20*time.Second, 20*time.Millisecond)

	viewer, _ := b.signedInMember(t, "viewer")
	p := viewer.get(t, b.workspacePath("runs", "approvals"))
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, r.ID)
	require.Contains(t, p.body, "memory_write")
	require.Contains(t, p.body, "Lisbon &lt;b&gt;ten&lt;/b&gt; years")
	require.NotContains(t, p.body, ">Approve</button>")
	p = viewer.post(t, b.workspacePath("runs", r.ID, "approvals"), url.Values{"csrf_token": {hiddenFields(p.body)["csrf_token"]}, "call_id": {"x"}, "decision": {"deny"}})
	require.Equal(t, http.StatusForbidden, p.status)

	runner, _ := b.signedInMember(t, "runner")
	page := runner.get(t, b.workspacePath("runs", r.ID))
	require.Equal(t, http.StatusOK, page.status, page.body)
	require.Contains(t, page.body, "Waiting for your decision")
	require.Contains(t, page.body, ">Approve</button>")
	callID := hiddenFields(page.body)["call_id"]
	require.NotEmpty(t, callID)

	// A decision on a call that does not wait is refused on the page.
	p = runner.submit(t, b.workspacePath("runs", r.ID), b.workspacePath("runs", r.ID, "approvals"), url.Values{"call_id": {"call_nothing"}, "decision": {"approve"}})
	require.Equal(t, http.StatusConflict, p.status, p.body)

	p = runner.submit(t, b.workspacePath("runs", "approvals"), b.workspacePath("runs", r.ID, "approvals"),
		url.Values{"call_id": {callID}, "decision": {"deny"}, "message": {"Do not store addresses."}, "back": {"inbox"}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	require.Equal(t, b.workspacePath("runs", "approvals"), p.header.Get("Location"))
	require.Contains(t, runner.get(t, p.header.Get("Location")).body, "is denied")

	got := b.waitRun(t, r.ID)
	require.Equal(t, run.StatusSucceeded, got.Status, "%+v", got.Error)
	reqs := model.Requests()
	require.Len(t, reqs, 2)
	last, _ := json.Marshal(reqs[1].Messages)
	require.Contains(t, string(last), "Do not store addresses.", "the model reads why")
	require.Contains(t, runner.get(t, b.workspacePath("runs", "approvals")).body, "Nothing waits for a decision.")
}

// A runner watches a run stop for approval in the browser, approves the
// call there, and sees the run go on to its answer.
func TestBrowserApprovingAToolCall(t *testing.T) {
	t.Parallel()
	b, _, agentID := setupAsking(t, "Noted, thank you.")
	const pw = "a runner's password"
	m := b.member(t, "runner", pw)
	c := b.newChrome(t)
	c.signIn(m.Email, pw)
	c.open(b.workspacePath("runs", "new") + "?agent=" + agentID)
	c.fill(`textarea[name=input]`, "I lived in Lisbon for ten years.")
	c.click(`form.stack button[type=submit]`)
	c.el(`[data-live-stream]`)
	// The live page learns that the run waits and shows the decision.
	c.elText(`[data-live-status]`, "^waiting$")
	c.elText(`.approval strong`, "^memory_write$")
	c.screenshot("approval")
	c.clickText(`.approval button`, "^Approve$")
	c.elText(`[data-live-status]`, "^succeeded$")
	c.elText(`[data-live-timeline] .message-text`, "Noted, thank you.")
	c.settled()
	text := c.text(`[data-live-timeline]`)
	require.True(t, strings.Contains(text, "Approved: memory_write"), text)
	require.True(t, strings.Contains(text, "Tool result of memory_write"), text)
}
