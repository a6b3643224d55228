package catalog

// perplexity is the Perplexity Sonar API. It has no model list; the probe sends
// GET {base_url}/async/chat/completions (the caller's async jobs), which is
// authenticated and free.
func perplexity() Type {
	t := hostedChat("perplexity", "Perplexity", "https://api.perplexity.ai",
		"API key (pplx-...).", "https://docs.perplexity.ai/guides/api-key-management")
	t.Request.Path, t.Request.Expect = "/async/chat/completions", "requests"
	return t
}
