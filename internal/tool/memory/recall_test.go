package memory_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	memorytool "github.com/svcdev/svc/internal/tool/memory"
)

// TestContextRecallsRecordsForTheInput: the memories' part of the system
// prompt lists the agent's memories and recalls, from each, the records a
// search for the run's input finds; a memory that cannot be searched is
// named with the reason and the others still answer.
func TestContextRecallsRecordsForTheInput(t *testing.T) {
	t.Parallel()
	fake := startPinecone(t)
	srv := fake.Server
	b := setup(t, srv)
	notes := b.builtin(t, b.caller, "notes", "Facts about the user's travels.")
	tools := b.tools(t, b.caller, notes.ID)
	paris := write(t, tools, "", "notes", "The user lived in Paris,\nnear the Seine.", nil)
	write(t, tools, "", "notes", "Bananas are yellow.", nil)
	vectors := b.recordMemory(t, b.memoryProvider(t, "pinecone", srv, vendorKey), "vectors")
	gone := "mem_01aaaaaaaaaaaaaaaaaaaaaaaa"

	input := "Which city did I live in? Think of Paris."
	fake.FailNext(http.StatusServiceUnavailable)
	got, err := b.ts.Context(t.Context(), b.caller.WorkspaceID, []string{notes.ID, vectors.ID, gone}, input)
	require.NoError(t, err)
	require.Contains(t, got, "## Memories")
	require.Contains(t, got, memorytool.SearchTool)
	require.Contains(t, got, `"notes" (`+notes.ID+`): Facts about the user's travels.`)
	require.Contains(t, got, gone+": does not exist")
	require.Contains(t, got, `- "notes", record `+paris+`: The user lived in Paris, near the Seine.`, "one line per record")
	require.NotContains(t, got, "Bananas", "only records the input's words find")
	require.Contains(t, got, "- "+vectors.ID+" could not be searched: ")
	require.Contains(t, got, "answered HTTP 503")
	require.NotContains(t, got, srv.URL, "no vendor address")

	// The vendor answers again: its records are recalled with the input as
	// the query, as the vendor ranks them.
	rec := write(t, b.tools(t, b.caller, vectors.ID), "", "vectors", "Trip notes: Paris in spring.", nil)
	got, err = b.ts.Context(t.Context(), b.caller.WorkspaceID, []string{notes.ID, vectors.ID}, input)
	require.NoError(t, err)
	require.Contains(t, got, `- "vectors", record `+rec+`: Trip notes: Paris in spring.`)
	require.NotContains(t, got, "could not be searched")

	got, err = b.ts.Context(t.Context(), b.caller.WorkspaceID, []string{notes.ID}, "Tell me about oranges.")
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(got, "\n- none found."), got)

	got, err = b.ts.Context(t.Context(), b.caller.WorkspaceID, nil, input)
	require.NoError(t, err)
	require.Empty(t, got, "an agent without memories has no such part")
}
