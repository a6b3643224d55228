package catalog

// claudeSubscription uses a Claude Pro or Max subscription through an OAuth
// token from `claude setup-token` (Claude Code) instead of an API key. The
// subscription login cannot be probed without spending usage, so the test is
// unsupported (docs/decisions/0016-provider-tests.md).
func claudeSubscription() Type {
	return Type{
		ID: "claude_subscription", DisplayName: "Claude subscription", Kind: KindModel,
		Config: object(props{
			"base_url": url("API base URL.", "https://api.anthropic.com"),
		}),
		Credential: object(props{
			"oauth_token": secret("Long-lived OAuth token (sk-ant-oat...) printed by `claude setup-token`."),
		}, "oauth_token"),
		CredentialRequired: true,
		SetupURL:           "https://docs.anthropic.com/en/docs/claude-code/setup",
		Probe:              ProbeUnsupported,
		APIs:               []API{messages()},
	}
}
