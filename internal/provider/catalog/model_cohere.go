package catalog

// cohere is the Cohere platform, which speaks its own v2 Chat protocol. Probe:
// GET {base_url}/v1/models with a bearer key.
func cohere() Type {
	return Type{
		ID: "cohere", DisplayName: "Cohere", Kind: KindModel,
		Config: object(props{
			"base_url": url("API base URL; change it only for a proxy or a private deployment.", "https://api.cohere.com"),
		}),
		Credential:         apiKey("API key."),
		CredentialRequired: true,
		SetupURL:           "https://dashboard.cohere.com/api-keys",
		Probe:              ProbeAuthenticatedRead,
		Request: &ProbeRequest{
			Base: "base_url", Path: "/v1/models", Query: map[string]string{"page_size": "1"},
			AuthHeader: "Authorization", AuthPrefix: "Bearer ", Expect: "models",
		},
		APIs: []API{cohereChat()},
	}
}
