// Package examples_test runs the client examples of docs/examples against a
// real svc process (apitest: every service, a worker, PostgreSQL, Redis, a
// file object store) whose model is a scripted OpenAI-compatible server
// (llmtest). The Go example builds on gen/client; the TypeScript example's
// types are generated afresh from openapi/openapi.yaml by openapi-typescript
// and type-checked by tsc before it runs. So the contract cannot drift from
// what generators make of it without this test failing. The npm packages are
// installed by scripts/check-examples.sh (which scripts/test.sh runs).
package examples_test

import (
	"bytes"
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
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

// answer is what the scripted model says, streamed in pieces.
const answer = "Paris is the capital of France."

// otherAgents are agents the workspace has before the examples run, so
// that their lists take more than one page.
const otherAgents = 3

// dir is docs/examples in this checkout.
func dir(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok)
	return filepath.Dir(file)
}

// TestExamples runs the Go example and then the TypeScript one against one
// process and workspace, with an agent list of two per page. The Go example
// finds no model and creates it, then creates its agent; the TypeScript
// example finds that model and creates an agent of its own. Each prints the
// run's answer, the pages it read, a stream resumed with Last-Event-ID
// without a gap, and an asset's bytes back as they went up.
func TestExamples(t *testing.T) {
	model := llmtest.NewChatServer([]llmtest.Turn{{Text: answer, Chunks: 4, ChunkDelay: 20 * time.Millisecond}}, llmtest.Cycle())
	t.Cleanup(model.Close)
	u, err := url.Parse(model.URL)
	require.NoError(t, err)
	port, err := strconv.Atoi(u.Port())
	require.NoError(t, err)
	h := apitest.Start(t, apitest.Options{Configure: func(c *config.Config) {
		c.EndpointPolicy.AllowHTTP = true
		c.EndpointPolicy.AllowedPrefixes = []string{"127.0.0.0/8"}
		c.EndpointPolicy.AllowedPorts = []int{port}
	}})
	admin := testfactory.Bootstrap(t, h.App.Pool)
	for i := range otherAgents {
		testfactory.Agent(t, h.App.Pool, admin.Owner(), &testfactory.AgentOpts{Name: "other-" + strconv.Itoa(i)})
	}
	args := []string{"--url", h.URL, "--api-key", admin.APIKey, "--model-base-url", model.URL + "/v1",
		"--model-name", "scripted-1", "--page-size", "2"}
	examples := dir(t)

	// The Go example is a module of its own (it requires this one through a
	// replace directive), so the repository's go vet ./... does not reach it.
	runExample(t, filepath.Join(examples, "go"), "go", "vet", "./...")
	goOut := runExample(t, filepath.Join(examples, "go"), "go", append([]string{"run", "."}, args...)...)
	requireJourney(t, goOut, "example-go", otherAgents, 2)
	require.Contains(t, goOut, "model example: created on provider prv_")

	ts := filepath.Join(examples, "typescript")
	bin := filepath.Join(ts, "node_modules", ".bin")
	if _, err := os.Stat(filepath.Join(bin, "tsx")); err != nil {
		t.Fatalf("the TypeScript example's packages are not installed (%v): run scripts/check-examples.sh install (scripts/test.sh does)", err)
	}
	runExample(t, ts, filepath.Join(bin, "openapi-typescript"), "../../../openapi/openapi.yaml", "--output", "generated/api.d.ts")
	runExample(t, ts, filepath.Join(bin, "tsc"), "--project", "tsconfig.json")
	tsOut := runExample(t, ts, filepath.Join(bin, "tsx"), append([]string{"main.ts"}, args...)...)
	requireJourney(t, tsOut, "example-typescript", otherAgents+1, 2)
	require.Contains(t, tsOut, "model example: found (scripted-1)")
}

// requireJourney checks an example's output: it read agents agents on
// pages pages, created its agent, streamed the run to its end with one
// resume and no gap, printed the answer, and sent an asset up and down.
func requireJourney(t *testing.T, out, agent string, agents, pages int) {
	t.Helper()
	require.Contains(t, out, "workspace ")
	require.Contains(t, out, "agents: read "+strconv.Itoa(agents)+" on "+strconv.Itoa(pages)+" pages\n")
	require.Regexp(t, regexp.MustCompile(`(?m)^agent `+agent+`: created ap_`), out)
	require.Regexp(t, regexp.MustCompile(`(?m)^stream: closed after event 2 on purpose; resuming with Last-Event-ID: 2$`), out)
	require.Regexp(t, regexp.MustCompile(`(?m)^stream: events 1 to \d+, none missed or repeated$`), out)
	require.Contains(t, out, "\nanswer: "+answer+"\n")
	require.Regexp(t, regexp.MustCompile(`(?m)^run run_\w+: succeeded, [1-9]\d* input and [1-9]\d* output tokens$`), out)
	require.Regexp(t, regexp.MustCompile(`(?m)^asset as_\w+: 65536 bytes up and down, sha256 [0-9a-f]{12} matches$`), out)
	require.Regexp(t, regexp.MustCompile(`(?m)^asset as_\w+: retired$`), out)
}

// runExample runs name with args in dir and answers its standard output,
// failing the test with both outputs when it fails.
func runExample(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("%s %s:\n%s%s", filepath.Base(name), strings.Join(args, " "), stdout.String(), stderr.String())
	require.NoError(t, err, "%s in %s", filepath.Base(name), dir)
	return stdout.String()
}
