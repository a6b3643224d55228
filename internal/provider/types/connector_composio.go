package types

// composio is Composio, which brokers OAuth connections to third-party apps.
// Probe: one authenticated read of the project's auth configs (one item).
func composio() Type {
	return Type{
		ID: "composio", DisplayName: "Composio", Kind: KindConnector,
		Config: object(props{
			"base_url": url("API base URL.", "https://backend.composio.dev"),
		}),
		Credential:         apiKey("Project API key, sent as x-api-key."),
		CredentialRequired: true,
		SetupURL:           "https://platform.composio.dev/",
		Probe:              ProbeAuthenticatedRead,
		Request: &ProbeRequest{
			Base: "base_url", Path: "/api/v3/auth_configs", Query: map[string]string{"limit": "1"},
			AuthHeader: "x-api-key", Expect: "items",
		},
	}
}
