package catalog_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/provider/catalog"
)

func TestContextWindowDefaults(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		api, name string
		want      int
	}{
		{catalog.APIChatCompletions, "gpt-4o-mini-2024-07-18", 128_000},
		{catalog.APIResponses, "gpt-4.1-mini", 1_047_576},
		{catalog.APIChatCompletions, "gpt-4-turbo-preview", 128_000},
		{catalog.APIMessages, "claude-sonnet-4-5", 200_000},
		{catalog.APIGenerateContent, "gemini-1.5-pro-002", 2_097_152},
		{catalog.APIConverse, "us.anthropic.claude-3-7-sonnet-20250219-v1:0", 200_000},
		{catalog.APIChatCompletions, "llama-3.1-8b", 0},
		{catalog.APIMessages, "gpt-4o", 0},
	} {
		require.Equal(t, c.want, catalog.ContextWindow(c.api, c.name), "%s %s", c.api, c.name)
	}
}
