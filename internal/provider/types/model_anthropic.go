package types

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
		APIs:               []API{messages()},
	}
}
