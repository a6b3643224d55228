package catalog

// hostedChat declares a hosted vendor that speaks only the Chat Completions
// protocol at a fixed base URL with a bearer API key, which is most of them.
// The probe lists the models (GET {base_url}/models), which is free.
func hostedChat(id, name, baseURL, keyDesc, setupURL string) Type {
	return Type{
		ID: id, DisplayName: name, Kind: KindModel,
		Config:             object(props{"base_url": url("API base URL; change it only for a proxy or a regional endpoint.", baseURL)}),
		Credential:         apiKey(keyDesc),
		CredentialRequired: true,
		SetupURL:           setupURL,
		Probe:              ProbeAuthenticatedRead,
		Request:            bearerModels(),
		APIs:               []API{chatCompletions()},
	}
}
