package catalog

import "strings"

// contextWindows are the context windows, in tokens, of well-known vendor
// models, by API and model-name prefix. A model's own context_window wins;
// a name none matches has no default (docs/decisions/0051-context-fitting.md).
var contextWindows = map[string][]windowPrefix{
	APIChatCompletions: openAIWindows,
	APIResponses:       openAIWindows,
	APIMessages:        {{"claude-", 200_000}},
	APIGenerateContent: {
		{"gemini-1.5-pro", 2_097_152}, {"gemini-1.5-flash", 1_048_576},
		{"gemini-2.0", 1_048_576}, {"gemini-2.5", 1_048_576},
	},
	APIConverse: {
		{"anthropic.claude", 200_000}, {"us.anthropic.claude", 200_000}, {"eu.anthropic.claude", 200_000},
		{"apac.anthropic.claude", 200_000}, {"amazon.nova-pro", 300_000}, {"amazon.nova-lite", 300_000},
		{"amazon.nova-micro", 128_000}, {"meta.llama3-1", 128_000},
	},
	APIChat: {{"command-a", 256_000}, {"command-r", 128_000}},
}

var openAIWindows = []windowPrefix{
	{"gpt-3.5-turbo", 16_385}, {"gpt-4-turbo", 128_000}, {"gpt-4o", 128_000}, {"gpt-4.1", 1_047_576},
	{"gpt-5", 400_000}, {"o1", 200_000}, {"o3", 200_000}, {"o4-mini", 200_000},
}

type windowPrefix struct {
	prefix string
	tokens int
}

// ContextWindow is the default context window of model name on api: the
// entry of the longest prefix of name; 0 when none matches.
func ContextWindow(api, name string) int {
	best, tokens := 0, 0
	for _, w := range contextWindows[api] {
		if strings.HasPrefix(name, w.prefix) && len(w.prefix) > best {
			best, tokens = len(w.prefix), w.tokens
		}
	}
	return tokens
}
