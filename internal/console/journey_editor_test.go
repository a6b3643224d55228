package console_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/llm/llmtest"
	"github.com/svcdev/svc/internal/memory"
)

// An editor sets up everything an agent needs in the browser (a model
// provider from its type's form, a model, an agent) and runs it in the
// playground: the streamed text and the tool call appear live, and what
// the model says is shown as text, never run as HTML.
func TestBrowserEditorBuildsAnAgentAndWatchesItRunLive(t *testing.T) {
	t.Parallel()
	model := llmtest.NewChatServer([]llmtest.Turn{
		{Text: "Noting that down <img src=x onerror=\"window.__pwned=1\">.", Chunks: 6, ChunkDelay: 120 * time.Millisecond,
			ToolCalls: []llmtest.Call{{Name: "memory_write", Arguments: `{"memory":"notes","content":"Lisbon, ten years"}`}}},
		{Text: "Saved. <script>window.__pwned=1</script> Anything else?", Chunks: 6, ChunkDelay: 120 * time.Millisecond},
	})
	t.Cleanup(model.Close)
	b := setup(t, allowLoopback(t, model.URL))
	notes, err := b.h.App.Memories.Create(t.Context(), b.admin.Caller("admin"), memory.CreateInput{Name: "notes", Description: "What the user told us.", Kind: memory.KindBuiltin})
	require.NoError(t, err)

	const pw = "an editor's password"
	m := b.member(t, "editor", pw)
	c := b.newChrome(t)
	c.signIn(m.Email, pw)

	// A model provider, from the form of its type.
	c.open(b.workspacePath("providers", "model", "new") + "?type=openai_compatible")
	c.fill(`input[name=name]`, "local")
	c.fill(`[name="config.base_url"]`, model.URL+"/v1")
	c.click(`form.stack button[type=submit]`)
	c.elText("h1", "^local$")
	c.screenshot("provider")

	// A model on it.
	c.open(b.workspacePath("models", "new"))
	c.click(`form.filters button[type=submit]`)
	c.fill(`input[name=key]`, "main")
	c.fill(`input[name=model]`, "scripted-1")
	c.click(`form.stack button[type=submit]`)
	c.elText("h1", "main")

	// An agent, from the configuration editor.
	c.open(b.workspacePath("agents", "new"))
	c.fill(`input[name=name]`, "note taker")
	cfg := c.el(`textarea[name=config]`)
	require.NoError(t, cfg.SelectAllText())
	require.NoError(t, cfg.Input(`{"model":"main","instructions":"Take notes.","memories":[{"memory_id":"`+notes.ID+`"}]}`))
	c.click(`form.stack button[type=submit]`)
	c.elText("h1", "note taker")
	c.screenshot("agent")

	// The playground: the answer streams in, the tool call shows, the run
	// ends succeeded, all without reloading the page.
	c.clickText("a", "Run in the playground|Try it|Playground|Run it")
	c.el(`textarea[name=input]`)
	c.fill(`textarea[name=input]`, "I lived in Lisbon for ten years.")
	c.click(`form.stack button[type=submit]`)
	c.el(`[data-live-stream]`)
	c.elText(`[data-live-timeline] .message-text`, "Noting that down")
	c.elText(`[data-live-timeline] code`, "memory_write")
	c.elText(`[data-live-status]`, "succeeded")
	c.elText(`[data-live-timeline] .message-text`, "Anything else")
	c.settled()
	c.screenshot("run")

	pwned, err := c.page.Eval(`() => window.__pwned === undefined && document.querySelectorAll("[data-live-timeline] img, [data-live-timeline] script").length === 0`)
	require.NoError(t, err)
	require.True(t, pwned.Value.Bool(), "model output ran as HTML")
	text := c.text(`[data-live-timeline]`)
	require.True(t, strings.Contains(text, `<img src=x onerror="window.__pwned=1">`), "the markup is shown as text: %s", text)

	c.open(b.workspacePath("runs"))
	c.screenshot("runs")
	c.open(b.workspacePath("agents"))
	c.screenshot("agents")
}
