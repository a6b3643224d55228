package catalog

// azureOpenAI is Azure OpenAI in Azure AI Foundry. Probe: GET
// {endpoint}/openai/models?api-version={api_version} with the api-key header.
func azureOpenAI() Type {
	return Type{
		ID: "azure_openai", DisplayName: "Azure OpenAI", Kind: KindModel,
		Config: object(props{
			"endpoint":    url("Resource endpoint, e.g. https://my-resource.openai.azure.com.", ""),
			"api_version": withDefault(pattern("Data-plane API version.", `^[0-9]{4}-[0-9]{2}-[0-9]{2}(-preview)?$`), "2024-10-21"),
			"deployment":  str("Default deployment name; a model's vendor model name overrides it."),
		}, "endpoint"),
		Credential:         apiKey("Resource key (KEY 1 or KEY 2), sent as api-key."),
		CredentialRequired: true,
		SetupURL:           "https://learn.microsoft.com/azure/ai-foundry/openai/how-to/create-resource",
		Probe:              ProbeAuthenticatedRead,
		Request: &ProbeRequest{
			Base: "endpoint", Path: "/openai/models", Query: map[string]string{"api-version": "{api_version}"},
			AuthHeader: "api-key", Expect: "data",
		},
		APIs: []API{chatCompletions(), responses()},
	}
}
