package catalog

// mistral is La Plateforme of Mistral AI.
func mistral() Type {
	return hostedChat("mistral", "Mistral AI", "https://api.mistral.ai/v1",
		"API key.", "https://console.mistral.ai/api-keys")
}
