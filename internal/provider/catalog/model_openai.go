package catalog

// openAI is the OpenAI platform. Probe: GET {base_url}/models.
func openAI() Type {
	return Type{
		ID: "openai", DisplayName: "OpenAI", Kind: KindModel,
		Config: object(props{
			"base_url":     url("API base URL; change it only for a proxy.", "https://api.openai.com/v1"),
			"organization": str("Organization id (org-...), sent as OpenAI-Organization."),
			"project":      str("Project id (proj_...), sent as OpenAI-Project."),
		}),
		Credential:         apiKey("Secret API key (sk-...)."),
		CredentialRequired: true,
		SetupURL:           "https://platform.openai.com/api-keys",
		Probe:              ProbeAuthenticatedRead,
		Request: withHeaders(bearerModels(), map[string]string{
			"OpenAI-Organization": "{organization}",
			"OpenAI-Project":      "{project}",
		}),
		APIs: []API{chatCompletions(), responses()},
	}
}
