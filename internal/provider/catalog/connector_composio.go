package catalog

// composio is Composio, which brokers OAuth connections to third-party apps.
// Probe: one authenticated read of the project's auth configs (one item).
//
// A connection through it is one Composio connected account: its config names
// the auth config (ac_…) the account is connected with, which fixes the app
// (toolkit) and the auth scheme, and optionally where Composio sends the user
// after consent; its credential is the connected account's id (ca_…), which
// together with the project's API key lets svc act as the account.
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
		Connector: &Connector{
			Config: object(props{
				"auth_config_id": pattern("The Composio auth config the account is connected with (ac_…).", composioID),
				"callback_url":   url("Where Composio sends the user after consent; Composio's own page when left out.", ""),
			}, "auth_config_id"),
			Credential: object(props{
				"connected_account_id": withWriteOnly(pattern("The Composio connected account (ca_…) the connection acts as.", composioID)),
			}, "connected_account_id"),
		},
	}
}

// composioID is the shape of Composio's nano ids (ac_…, ca_…).
const composioID = `^[A-Za-z0-9_-]{1,128}$`
