package types

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
		APIs:               []API{cohereChat()},
	}
}
