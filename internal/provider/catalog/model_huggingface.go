package catalog

// huggingFace is Hugging Face Inference Providers through its OpenAI-compatible
// router, or a dedicated Inference Endpoint at another base URL.
func huggingFace() Type {
	return hostedChat("huggingface", "Hugging Face", "https://router.huggingface.co/v1",
		"User access token (hf_...) with the Inference Providers permission.", "https://huggingface.co/settings/tokens")
}
