package catalog

// together is Together AI's inference API. Its model list (the probe) is a bare
// JSON array rather than an OpenAI-style list object.
func together() Type {
	t := hostedChat("together", "Together AI", "https://api.together.xyz/v1",
		"API key.", "https://api.together.ai/settings/api-keys")
	t.Request.Expect = ""
	return t
}
