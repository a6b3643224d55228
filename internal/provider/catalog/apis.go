package catalog

// The model API families and the settings a model on each can carry. Names are
// the same across families where the meaning is (max_output_tokens is
// max_tokens, max_completion_tokens, maxTokens or max_output_tokens on the wire);
// each adapter maps them. Ranges are the vendors' documented ones.

// The API ids.
const (
	APIChatCompletions = "chat_completions"
	APIResponses       = "responses"
	APIMessages        = "messages"
	APIGenerateContent = "generate_content"
	APIConverse        = "converse"
	APIChat            = "chat"
)

func maxOutputTokens() map[string]any {
	return integer("Upper bound on generated tokens, reasoning included where the vendor counts it.", 1, 1_000_000)
}

func topP() map[string]any { return number("Nucleus sampling: the probability mass considered.", 0, 1) }

func temperature(hi float64) map[string]any {
	return number("Sampling temperature; lower is more deterministic.", 0, hi)
}

func seed() map[string]any {
	return integer("Seed for best-effort deterministic sampling.", 0, 2147483647)
}

func reasoningEffort() map[string]any {
	return enum("How much reasoning a reasoning model does before answering.", "minimal", "low", "medium", "high")
}

// chatCompletions is the OpenAI Chat Completions protocol (POST /chat/completions),
// also spoken by most hosted open-model vendors and gateways.
func chatCompletions() API {
	return API{ID: APIChatCompletions, Settings: object(props{
		"temperature":         temperature(2),
		"top_p":               topP(),
		"max_output_tokens":   maxOutputTokens(),
		"frequency_penalty":   number("Penalty for tokens by how often they appeared so far.", -2, 2),
		"presence_penalty":    number("Penalty for tokens that appeared at all so far.", -2, 2),
		"seed":                seed(),
		"stop":                strList("Sequences that end generation.", 4),
		"reasoning_effort":    reasoningEffort(),
		"parallel_tool_calls": boolean("Whether the model may call several tools in one turn."),
	})}
}

// responses is the OpenAI Responses protocol (POST /responses).
func responses() API {
	return API{ID: APIResponses, Settings: object(props{
		"temperature":         temperature(2),
		"top_p":               topP(),
		"max_output_tokens":   maxOutputTokens(),
		"reasoning_effort":    reasoningEffort(),
		"reasoning_summary":   enum("Whether and how reasoning is summarised.", "auto", "concise", "detailed"),
		"text_verbosity":      enum("How long the answer text tends to be.", "low", "medium", "high"),
		"parallel_tool_calls": boolean("Whether the model may call several tools in one turn."),
		"truncation":          enum("What happens when the input exceeds the context window.", "auto", "disabled"),
		"service_tier":        enum("Processing tier.", "auto", "default", "flex", "priority"),
	})}
}

// messages is the Anthropic Messages protocol (POST /v1/messages).
func messages() API {
	return API{ID: APIMessages, Settings: object(props{
		"temperature":            temperature(1),
		"top_p":                  topP(),
		"top_k":                  integer("Sample only from the k most likely tokens.", 1, 1000),
		"max_output_tokens":      maxOutputTokens(),
		"thinking_budget_tokens": integer("Enables extended thinking with this token budget (below max_output_tokens).", 1024, 1_000_000),
		"stop_sequences":         strList("Sequences that end generation.", 16),
	})}
}

// generateContent is the Gemini generateContent protocol (Gemini API and Vertex AI).
func generateContent() API {
	return API{ID: APIGenerateContent, Settings: object(props{
		"temperature":       temperature(2),
		"top_p":             topP(),
		"top_k":             integer("Sample only from the k most likely tokens.", 1, 1000),
		"max_output_tokens": maxOutputTokens(),
		"thinking_budget":   integer("Thinking tokens: -1 lets the model decide, 0 turns thinking off where the model allows.", -1, 32768),
		"presence_penalty":  number("Penalty for tokens that appeared at all so far.", -2, 2),
		"frequency_penalty": number("Penalty for tokens by how often they appeared so far.", -2, 2),
		"seed":              seed(),
		"stop_sequences":    strList("Sequences that end generation.", 5),
	})}
}

// converse is the Amazon Bedrock Converse protocol (POST /model/{id}/converse).
func converse() API {
	return API{ID: APIConverse, Settings: object(props{
		"temperature":       temperature(1),
		"top_p":             topP(),
		"max_output_tokens": maxOutputTokens(),
		"stop_sequences":    strList("Sequences that end generation.", 2500),
		"latency":           enum("Latency-optimised inference where the model offers it.", "standard", "optimized"),
	})}
}

// cohereChat is the Cohere v2 Chat protocol (POST /v2/chat).
func cohereChat() API {
	return API{ID: APIChat, Settings: object(props{
		"temperature":       temperature(1),
		"top_p":             number("Nucleus sampling (Cohere's p).", 0.01, 0.99),
		"top_k":             integer("Sample only from the k most likely tokens (Cohere's k); 0 disables.", 0, 500),
		"max_output_tokens": maxOutputTokens(),
		"frequency_penalty": number("Penalty for tokens by how often they appeared so far.", 0, 1),
		"presence_penalty":  number("Penalty for tokens that appeared at all so far.", 0, 1),
		"seed":              seed(),
		"stop_sequences":    strList("Sequences that end generation.", 5),
		"safety_mode":       enum("Cohere's safety instruction.", "CONTEXTUAL", "STRICT", "OFF"),
	})}
}
