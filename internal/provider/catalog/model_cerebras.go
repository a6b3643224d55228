package catalog

// cerebras is Cerebras Inference.
func cerebras() Type {
	return hostedChat("cerebras", "Cerebras", "https://api.cerebras.ai/v1",
		"API key (csk-...).", "https://cloud.cerebras.ai/")
}
