package catalog

// groq is Groq's OpenAI-compatible API.
func groq() Type {
	return hostedChat("groq", "Groq", "https://api.groq.com/openai/v1",
		"API key (gsk_...).", "https://console.groq.com/keys")
}
