package worker_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/agent"
	"github.com/svcdev/svc/internal/asset"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/environment"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/llm/llmtest"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/refcheck"
	"github.com/svcdev/svc/internal/revision"
	"github.com/svcdev/svc/internal/run"
	"github.com/svcdev/svc/internal/sandbox"
	"github.com/svcdev/svc/internal/sandbox/local"
	"github.com/svcdev/svc/internal/skill"
	"github.com/svcdev/svc/internal/testfactory"
	"github.com/svcdev/svc/internal/tool"
	environmenttool "github.com/svcdev/svc/internal/tool/environment"
	"github.com/svcdev/svc/internal/worker"
)

// TestEnvironmentToolsOnLocalType: the agent's environment is made on the
// first tool call from its template, commands and files work in it, and the
// thread's next run reuses it; the maintain sweep deletes it once idle.
func TestEnvironmentToolsOnLocalType(t *testing.T) {
	t.Parallel()
	script := []llmtest.Turn{
		{Text: "Writing.", ToolCalls: []llmtest.Call{{Name: "run_command", Arguments: `{"command":"echo hello > note.txt && cat note.txt"}`}}},
		{Text: "Reading.", ToolCalls: []llmtest.Call{{Name: "read_file", Arguments: `{"path":"note.txt"}`}, {Name: "read_file", Arguments: `{"path":"../escape"}`}}},
		{Text: "Done."},
		// The second run of the thread sees the file of the first.
		{Text: "Again.", ToolCalls: []llmtest.Call{{Name: "list_files", Arguments: `{}`}}},
		{Text: "Still there."},
	}
	b := setup(t, script, 3)
	ctx := t.Context()
	workdir := t.TempDir()
	tplCfg, _ := json.Marshal(map[string]any{"workdir": workdir})
	tpl := testfactory.EnvironmentTemplate(t, b.pool, testfactory.OwnerOf(b.caller), &testfactory.EnvironmentTemplateOpts{
		Config: tplCfg, IdleDeleteSeconds: 60}).ID
	reg, err := catalog.New(catalog.Options{LocalEnabled: true})
	require.NoError(t, err)
	// A skill whose package holds a script: it is placed in the environment.
	assets := asset.NewService(b.pool, b.store, 1<<20, slog.New(slog.NewTextHandler(io.Discard, nil)))
	var zipped bytes.Buffer
	zw := zip.NewWriter(&zipped)
	f, err := zw.Create("bin/greet.sh")
	require.NoError(t, err)
	_, err = f.Write([]byte("echo greetings\n"))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	pkg, err := assets.Create(ctx, b.caller, asset.CreateInput{Name: "greeter.zip", ContentType: "application/zip", Size: int64(zipped.Len()), Body: &zipped})
	require.NoError(t, err)
	wsRefs := refcheck.Workspace{Types: reg, Assets: assets}
	skills := skill.NewService(b.pool, wsRefs)
	greeter, err := skills.Create(ctx, b.caller, revision.CreateInput{Name: "Greeter",
		Config: json.RawMessage(`{"instructions":"Run skills/greeter/bin/greet.sh to greet.","package":{"asset_id":"` + pkg.ID + `"}}`)})
	require.NoError(t, err)
	agents := agent.NewService(b.pool, reg, wsRefs)
	head, err := agents.Create(ctx, b.caller, revision.CreateInput{Name: "builder",
		Config: json.RawMessage(`{"model":"main","tools":{"environment":{"template_id":"` + tpl + `"}},"skills":[{"skill_id":"` + greeter.ID + `"}]}`)})
	require.NoError(t, err)

	path := filepath.Join(t.TempDir(), "ring.json")
	require.NoError(t, keyring.Generate(path))
	ring, err := keyring.Load(path)
	require.NoError(t, err)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	rt := environment.NewRuntime(b.pool, ring, map[string]sandbox.Driver{
		catalog.LocalType: local.NewDriver(config.Environments{LocalEnabled: true}, local.Options{}),
	}, 10*time.Second, log)
	runs := run.NewService(b.pool, agents, skills, reg, run.Options{MaxAttempts: 3})
	exec := worker.NewExecutor(readers(worker.ExecutorDeps{Runs: runs, Objects: b.store,
		HTTPClient: b.exec.HTTPClient(), Toolsets: []tool.Toolset{environmenttool.New(environmenttool.Deps{Runtime: rt, Skills: skills, Assets: assets}).ForRun}, Log: log}, b.pool, reg, ring))
	w := worker.New(b.pool, runs, exec, worker.Options{ID: "w1", Slots: 2, Lease: 30 * time.Second, Drain: time.Second, Poll: 50 * time.Millisecond}, log)
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	defer func() { cancel(); <-done }()

	first, err := runs.Start(ctx, b.caller, run.StartInput{AgentID: head.ID, Input: "make a note"})
	require.NoError(t, err)
	got := b.waitRun(t, first.ID, 10*time.Second)
	require.Equal(t, run.StatusSucceeded, got.Status, "%+v", got.Error)

	msgs, err := runs.ListMessages(ctx, b.caller, first.ThreadID, 0, 100)
	require.NoError(t, err)
	var tools []run.Message
	for _, m := range msgs {
		if m.Role == "tool" {
			tools = append(tools, m)
		}
	}
	require.Len(t, tools, 3)
	require.Contains(t, tools[0].Content, `"stdout":"hello\n"`)
	require.Contains(t, tools[0].Content, `"exit_code":0`)
	require.Contains(t, tools[1].Content, `"content":"hello\n"`)
	require.True(t, tools[2].IsError, "a path outside the working directory is refused")

	th, err := runs.GetThread(ctx, b.caller, first.ThreadID)
	require.NoError(t, err)
	require.NotNil(t, th.EnvironmentID)
	envDir := filepath.Join(workdir, *th.EnvironmentID, "work")
	data, err := os.ReadFile(filepath.Join(envDir, "note.txt"))
	require.NoError(t, err)
	require.Equal(t, "hello\n", string(data))
	greet, err := os.ReadFile(filepath.Join(envDir, "skills", "greeter", "bin", "greet.sh"))
	require.NoError(t, err, "the skill's package was placed in the environment")
	require.Equal(t, "echo greetings\n", string(greet))
	require.Contains(t, b.model.Requests()[0].Messages[0]["content"], "## Skill: Greeter", "the skill's instructions are in the system prompt")

	second, err := runs.Start(ctx, b.caller, run.StartInput{AgentID: head.ID, Input: "is it there?", ThreadID: &first.ThreadID})
	require.NoError(t, err)
	got = b.waitRun(t, second.ID, 10*time.Second)
	require.Equal(t, run.StatusSucceeded, got.Status, "%+v", got.Error)
	msgs, err = runs.ListMessages(ctx, b.caller, first.ThreadID, 0, 100)
	require.NoError(t, err)
	require.Contains(t, msgs[len(msgs)-2].Content, "note.txt", "the thread's environment was reused")
	var envCount int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM environment WHERE thread_id = $1`, first.ThreadID).Scan(&envCount))
	require.Equal(t, 1, envCount)

	// Idle past idle_delete_seconds: the sweep deletes it.
	_, err = b.pool.Exec(ctx, `UPDATE environment SET last_used_at = now() - interval '2 minutes' WHERE id = $1`, *th.EnvironmentID)
	require.NoError(t, err)
	n, err := rt.Maintain(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	var status string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT status FROM environment WHERE id = $1`, *th.EnvironmentID).Scan(&status))
	require.Equal(t, "deleted", status)
	_, err = os.Stat(envDir)
	require.True(t, os.IsNotExist(err), "the folder is gone")
	require.False(t, strings.Contains(status, "running"))
}
