package catalog

// ollama is an Ollama server, usually on the deployment's own network (which
// the endpoint policy must allow), or ollama.com with an API key. Probe: GET
// {base_url}/api/tags.
func ollama() Type {
	return Type{
		ID: "ollama", DisplayName: "Ollama", Kind: KindModel,
		Config: object(props{
			"base_url": url("Server URL; the OpenAI-compatible API is served under /v1.", "http://localhost:11434"),
		}, "base_url"),
		Credential:         object(props{"api_key": secret("API key, needed only for ollama.com.")}),
		CredentialRequired: false,
		SetupURL:           "https://ollama.com/download",
		Probe:              ProbeAuthenticatedRead,
		Request: &ProbeRequest{
			Base: "base_url", Path: "/api/tags",
			AuthHeader: "Authorization", AuthPrefix: "Bearer ", Expect: "models",
		},
		APIs: []API{chatCompletions()},
	}
}
