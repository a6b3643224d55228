package catalog

// deepSeek is DeepSeek's platform API.
func deepSeek() Type {
	return hostedChat("deepseek", "DeepSeek", "https://api.deepseek.com",
		"API key (sk-...).", "https://platform.deepseek.com/api_keys")
}
