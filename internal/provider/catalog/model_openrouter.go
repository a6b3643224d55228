package catalog

// openRouter is the OpenRouter aggregator. The test is unsupported
// (docs/decisions/0016-provider-tests.md): its model list is public, so a probe would not
// prove the key.
func openRouter() Type {
	return Type{
		ID: "openrouter", DisplayName: "OpenRouter", Kind: KindModel,
		Config: object(props{
			"base_url": url("API base URL.", "https://openrouter.ai/api/v1"),
			"site_url": url("Your site, sent as HTTP-Referer for OpenRouter's rankings.", ""),
			"app_name": str("Your application's name, sent as X-Title."),
		}),
		Credential:         apiKey("API key (sk-or-...)."),
		CredentialRequired: true,
		SetupURL:           "https://openrouter.ai/settings/keys",
		Probe:              ProbeUnsupported,
		APIs:               []API{chatCompletions()},
	}
}
