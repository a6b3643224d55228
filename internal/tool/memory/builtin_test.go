package memory_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	memorytool "github.com/svcdev/svc/internal/tool/memory"
)

func TestToolsDescribeTheAgentsMemories(t *testing.T) {
	t.Parallel()
	b := setup(t)
	notes := b.builtin(t, b.caller, "notes", "What the user told us about their garden.")
	facts := b.builtin(t, b.caller, "facts", strings.Repeat("long ", 100))
	gone := "mem_01jd5v6w1q3yb8j8y3tn9z2k7h"

	list, err := b.ts.Tools(t.Context(), b.caller.WorkspaceID, nil)
	require.NoError(t, err)
	require.Empty(t, list, "an agent without memories gets no memory tools")

	tools := b.tools(t, b.caller, notes.ID, facts.ID, gone, notes.ID)
	require.Len(t, tools, 3)
	for _, name := range []string{memorytool.SearchTool, memorytool.ReadTool, memorytool.WriteTool} {
		def := tools[name].Def
		require.Regexp(t, `^[a-zA-Z0-9_-]{1,64}$`, def.Name)
		require.Contains(t, def.Description, `"notes" (`+notes.ID+`): What the user told us about their garden.`)
		require.Contains(t, def.Description, gone+": does not exist")
		require.NotContains(t, def.Description, strings.Repeat("long ", 60), "long descriptions are cut")
		var schema struct {
			Type       string `json:"type"`
			Properties map[string]struct {
				Enum []string `json:"enum"`
			} `json:"properties"`
			Required             []string `json:"required"`
			AdditionalProperties bool     `json:"additionalProperties"`
		}
		require.NoError(t, json.Unmarshal(def.Parameters, &schema))
		require.Equal(t, "object", schema.Type)
		require.Contains(t, schema.Required, "memory")
		require.Equal(t, []string{notes.ID, facts.ID, gone, "notes", "facts"}, schema.Properties["memory"].Enum)
	}
}

func TestBuiltinWriteReadSearch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	notes := b.builtin(t, b.caller, "notes", "")
	tools := b.tools(t, b.caller, notes.ID)

	apples := write(t, tools, "run_1", "notes", "Apples grow best in cool climates; apples need pollinators.", map[string]any{"topic": "fruit", "run_id": "forged"})
	pears := write(t, tools, "run_1", notes.ID, "Pears ripen off the tree, unlike apples.", nil)
	write(t, tools, "", "notes", "Tomatoes want full sun.", map[string]any{"nested": map[string]any{"a": []int{1, 2}}})

	got := ok[readAnswer](t, call(t, tools[memorytool.ReadTool], "", map[string]any{"memory": "notes", "id": apples}))
	require.Equal(t, notes.ID, got.Memory)
	require.Equal(t, apples, got.ID)
	require.Equal(t, "Apples grow best in cool climates; apples need pollinators.", got.Content)
	require.Equal(t, map[string]any{"topic": "fruit", "run_id": "run_1"}, got.Metadata, "run_id is the run's, not the model's")
	require.Nil(t, got.Score)

	found := ok[searchAnswer](t, call(t, tools[memorytool.SearchTool], "", map[string]any{"memory": notes.ID, "query": "apples"}))
	require.Equal(t, notes.ID, found.Memory)
	require.Len(t, found.Records, 2)
	require.Equal(t, apples, found.Records[0].ID, "two mentions rank above one")
	require.Equal(t, pears, found.Records[1].ID)
	require.Greater(t, *found.Records[0].Score, *found.Records[1].Score)
	require.Equal(t, map[string]any{"run_id": "run_1"}, found.Records[1].Metadata)

	// websearch syntax: a phrase and an exclusion.
	found = ok[searchAnswer](t, call(t, tools[memorytool.SearchTool], "", map[string]any{"memory": "notes", "query": `apples -pears`}))
	require.Len(t, found.Records, 1)
	require.Equal(t, apples, found.Records[0].ID)

	found = ok[searchAnswer](t, call(t, tools[memorytool.SearchTool], "", map[string]any{"memory": "notes", "query": "apples", "limit": 1}))
	require.Len(t, found.Records, 1)

	tomatoes := ok[searchAnswer](t, call(t, tools[memorytool.SearchTool], "", map[string]any{"memory": "notes", "query": "TOMATOES"}))
	require.Len(t, tomatoes.Records, 1)
	require.Equal(t, map[string]any{"nested": map[string]any{"a": []any{1.0, 2.0}}}, tomatoes.Records[0].Metadata, "no run: no run_id")

	none := ok[searchAnswer](t, call(t, tools[memorytool.SearchTool], "", map[string]any{"memory": "notes", "query": "bananas"}))
	require.Empty(t, none.Records)
	require.Contains(t, call(t, tools[memorytool.SearchTool], "", map[string]any{"memory": "notes", "query": "bananas"}).Text, `"records":[]`)
}

func TestBuiltinSearchWithoutLexemesMatchesSubstrings(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.builtin(t, b.caller, "code", "")
	tools := b.tools(t, b.caller, m.ID)
	plus := write(t, tools, "", "code", "Use ++ to increment in C.", nil)
	pct := write(t, tools, "", "code", "It is 100% done.", nil)
	write(t, tools, "", "code", "Nothing special here.", nil)

	found := ok[searchAnswer](t, call(t, tools[memorytool.SearchTool], "", map[string]any{"memory": "code", "query": "++"}))
	require.Len(t, found.Records, 1)
	require.Equal(t, plus, found.Records[0].ID)
	require.Zero(t, *found.Records[0].Score)

	// LIKE's wildcards are matched literally.
	found = ok[searchAnswer](t, call(t, tools[memorytool.SearchTool], "", map[string]any{"memory": "code", "query": "%"}))
	require.Len(t, found.Records, 1)
	require.Equal(t, pct, found.Records[0].ID)
	found = ok[searchAnswer](t, call(t, tools[memorytool.SearchTool], "", map[string]any{"memory": "code", "query": "_"}))
	require.Empty(t, found.Records)
}

func TestArgumentsAreCheckedForTheModel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	notes := b.builtin(t, b.caller, "notes", "")
	twinA := b.builtin(t, b.caller, "twin", "")
	b.builtin(t, b.caller, "twin", "")
	tools := b.tools(t, b.caller, notes.ID, twinA.ID)
	twins := b.tools(t, b.caller, twinA.ID, b.builtin(t, b.caller, "twin", "").ID)

	bigMeta := map[string]any{"blob": strings.Repeat("x", memorytool.MaxMetadataBytes)}
	for _, tc := range []struct {
		name, tool string
		args       any
		want       string
	}{
		{"unknown memory", memorytool.SearchTool, map[string]any{"memory": "diary", "query": "x"}, `"diary" is not one of this agent's memories`},
		{"memory of no agent", memorytool.WriteTool, map[string]any{"memory": "mem_01jd5v6w1q3yb8j8y3tn9z2k7h", "content": "x"}, "not one of this agent's memories"},
		{"empty query", memorytool.SearchTool, map[string]any{"memory": "notes", "query": "  "}, "query is empty"},
		{"long query", memorytool.SearchTool, map[string]any{"memory": "notes", "query": strings.Repeat("a", memorytool.MaxQueryBytes+1)}, "at most 4096"},
		{"limit zero", memorytool.SearchTool, map[string]any{"memory": "notes", "query": "x", "limit": 0}, "between 1 and 20"},
		{"limit too high", memorytool.SearchTool, map[string]any{"memory": "notes", "query": "x", "limit": 21}, "between 1 and 20"},
		{"unknown member", memorytool.SearchTool, map[string]any{"memory": "notes", "query": "x", "top": 3}, "invalid arguments"},
		{"not an object", memorytool.ReadTool, []int{1}, "invalid arguments"},
		{"bad record id", memorytool.ReadTool, map[string]any{"memory": "notes", "id": "rec1"}, "is not a record id"},
		{"unknown record", memorytool.ReadTool, map[string]any{"memory": "notes", "id": "mrec_01jd5v6w1q3yb8j8y3tn9z2k7h"}, "has no record mrec_01jd5v6w1q3yb8j8y3tn9z2k7h"},
		{"empty content", memorytool.WriteTool, map[string]any{"memory": "notes", "content": ""}, "content is empty"},
		{"content too long", memorytool.WriteTool, map[string]any{"memory": "notes", "content": strings.Repeat("é", memorytool.MaxContentBytes/2+1)}, "at most 16384"},
		{"NUL in content", memorytool.WriteTool, map[string]any{"memory": "notes", "content": "a\x00b"}, "NUL"},
		{"metadata array", memorytool.WriteTool, map[string]any{"memory": "notes", "content": "x", "metadata": []int{1}}, "metadata must be a JSON object"},
		{"metadata string", memorytool.WriteTool, map[string]any{"memory": "notes", "content": "x", "metadata": "a"}, "metadata must be a JSON object"},
		{"metadata too large", memorytool.WriteTool, map[string]any{"memory": "notes", "content": "x", "metadata": bigMeta}, "at most 4096"},
		{"NUL in metadata", memorytool.WriteTool, map[string]any{"memory": "notes", "content": "x", "metadata": map[string]string{"k": "\x00"}}, "NUL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Contains(t, failed(t, call(t, tools[tc.tool], "", tc.args)), tc.want)
		})
	}
	require.Contains(t, failed(t, call(t, twins[memorytool.SearchTool], "", map[string]any{"memory": "twin", "query": "x"})), "name the memory by its id")

	var count int
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT count(*) FROM memory_record`).Scan(&count))
	require.Zero(t, count, "refused writes store nothing")

	// The largest content and metadata are accepted.
	id := write(t, tools, "", "notes", strings.Repeat("é", memorytool.MaxContentBytes/2), map[string]any{"blob": strings.Repeat("x", memorytool.MaxMetadataBytes-12)})
	got := ok[readAnswer](t, call(t, tools[memorytool.ReadTool], "", map[string]any{"memory": "notes", "id": id}))
	require.Len(t, got.Content, memorytool.MaxContentBytes)
}

func TestDeletedMemoryIsAToolError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	notes := b.builtin(t, b.caller, "notes", "")
	tools := b.tools(t, b.caller, notes.ID)
	id := write(t, tools, "", "notes", "remember me", nil)

	etag := notes.ETag()
	require.NoError(t, b.memories.Delete(t.Context(), b.caller, notes.ID, &etag))

	for name, args := range map[string]map[string]any{
		memorytool.SearchTool: {"memory": "notes", "query": "remember"},
		memorytool.ReadTool:   {"memory": notes.ID, "id": id},
		memorytool.WriteTool:  {"memory": "notes", "content": "again"},
	} {
		require.Contains(t, failed(t, call(t, tools[name], "", args)), "memory "+notes.ID+" does not exist", name)
	}
}

func TestBuiltinMemoriesAreIsolatedByWorkspace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other := b.otherWorkspace(t)
	mine := b.builtin(t, b.caller, "notes", "")
	theirs := b.builtin(t, other, "notes", "their secrets")

	theirTools := b.tools(t, other, theirs.ID)
	secret := write(t, theirTools, "", "notes", "the launch code is swordfish", nil)

	// Naming the other workspace's memory: listed by id only, unusable.
	tools := b.tools(t, b.caller, mine.ID, theirs.ID)
	require.NotContains(t, tools[memorytool.SearchTool].Def.Description, "their secrets")
	require.Contains(t, failed(t, call(t, tools[memorytool.SearchTool], "", map[string]any{"memory": theirs.ID, "query": "swordfish"})), "does not exist")
	require.Contains(t, failed(t, call(t, tools[memorytool.ReadTool], "", map[string]any{"memory": theirs.ID, "id": secret})), "does not exist")
	require.Contains(t, failed(t, call(t, tools[memorytool.WriteTool], "", map[string]any{"memory": theirs.ID, "content": "x"})), "does not exist")

	// Its records are not reachable through a memory of this workspace.
	require.Contains(t, failed(t, call(t, tools[memorytool.ReadTool], "", map[string]any{"memory": "notes", "id": secret})), "has no record")
	found := ok[searchAnswer](t, call(t, tools[memorytool.SearchTool], "", map[string]any{"memory": "notes", "query": "swordfish"}))
	require.Empty(t, found.Records)
	found = ok[searchAnswer](t, call(t, tools[memorytool.SearchTool], "", map[string]any{"memory": "notes", "query": "%"}))
	require.Empty(t, found.Records)

	// The other workspace still reads its own.
	got := ok[readAnswer](t, call(t, theirTools[memorytool.ReadTool], "", map[string]any{"memory": "notes", "id": secret}))
	require.Equal(t, "the launch code is swordfish", got.Content)
}

func TestCallOptionsComeFromTheCallsContext(t *testing.T) {
	t.Parallel()
	b := setup(t)
	notes := b.builtin(t, b.caller, "notes", "")
	tools := b.tools(t, b.caller, notes.ID)
	res, err := tools[memorytool.WriteTool].Call(ctxWithRun(t.Context(), "run_ctx"), json.RawMessage(`{"memory":"notes","content":"hello"}`))
	require.NoError(t, err)
	w := ok[writeAnswer](t, res)
	var meta string
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT metadata::text FROM memory_record WHERE id = $1`, w.ID).Scan(&meta))
	require.JSONEq(t, `{"run_id":"run_ctx"}`, meta)
}
