package types

// together is Together AI's inference API.
func together() Type {
	return hostedChat("together", "Together AI", "https://api.together.xyz/v1",
		"API key.", "https://api.together.ai/settings/api-keys")
}
