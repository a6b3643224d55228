package catalog

// openAICompatible is any server that speaks the Chat Completions protocol
// (vLLM, LM Studio, llama.cpp, LiteLLM...). Probe: GET {base_url}/models.
func openAICompatible() Type {
	return Type{
		ID: "openai_compatible", DisplayName: "OpenAI-compatible server", Kind: KindModel,
		Config: object(props{
			"base_url": url("Base URL that serves /chat/completions and /models, usually ending in /v1.", ""),
		}, "base_url"),
		Credential:         object(props{"api_key": secret("Bearer token, when the server requires one.")}),
		CredentialRequired: false,
		SetupURL:           "https://platform.openai.com/docs/api-reference/chat",
		Probe:              ProbeAuthenticatedRead,
		Request:            bearerModels(),
		APIs:               []API{chatCompletions()},
	}
}
