package catalog

// anthropic is the Claude API. Probe: GET {base_url}/v1/models with x-api-key
// and anthropic-version.
func anthropic() Type {
	return Type{
		ID: "anthropic", DisplayName: "Anthropic", Kind: KindModel,
		Config: object(props{
			"base_url": url("API base URL; change it only for a proxy.", "https://api.anthropic.com"),
		}),
		Credential:         apiKey("API key (sk-ant-api...), sent as x-api-key."),
		CredentialRequired: true,
		SetupURL:           "https://console.anthropic.com/settings/keys",
		Probe:              ProbeAuthenticatedRead,
		Request: &ProbeRequest{
			Base: "base_url", Path: "/v1/models", Query: map[string]string{"limit": "1"},
			Headers:    map[string]string{"anthropic-version": "2023-06-01"},
			AuthHeader: "x-api-key", Expect: "data",
		},
		APIs: []API{messages()},
	}
}
