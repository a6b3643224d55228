package catalog

// portkey is the Portkey AI gateway, an aggregator: requests carry the Portkey
// key and name the upstream by a virtual key or a gateway config. The test is
// unsupported (docs/decisions/0016-provider-tests.md).
func portkey() Type {
	return Type{
		ID: "portkey", DisplayName: "Portkey", Kind: KindModel,
		Config: object(props{
			"base_url":  url("Gateway URL; change it for a self-hosted gateway.", "https://api.portkey.ai/v1"),
			"config_id": pattern("Saved gateway config (pc-...), sent as x-portkey-config.", `^pc-[A-Za-z0-9-]+$`),
			"provider":  str("Upstream provider slug (such as @openai-prod), sent as x-portkey-provider."),
		}),
		Credential: object(props{
			"api_key":     secret("Portkey API key, sent as x-portkey-api-key."),
			"virtual_key": secret("Virtual key of the upstream account, sent as x-portkey-virtual-key."),
		}, "api_key"),
		CredentialRequired: true,
		SetupURL:           "https://app.portkey.ai/api-keys",
		Probe:              ProbeUnsupported,
		APIs:               []API{chatCompletions()},
	}
}
