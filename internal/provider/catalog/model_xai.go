package catalog

// xAI is xAI's Grok API.
func xAI() Type {
	return hostedChat("xai", "xAI", "https://api.x.ai/v1",
		"API key (xai-...).", "https://console.x.ai/")
}
