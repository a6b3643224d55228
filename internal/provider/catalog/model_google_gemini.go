package catalog

// googleGemini is the Gemini API of Google AI Studio. Probe: GET
// {base_url}/v1beta/models with x-goog-api-key.
func googleGemini() Type {
	return Type{
		ID: "google_gemini", DisplayName: "Google Gemini", Kind: KindModel,
		Config: object(props{
			"base_url": url("API base URL; change it only for a proxy.", "https://generativelanguage.googleapis.com"),
		}),
		Credential:         apiKey("Gemini API key, sent as x-goog-api-key."),
		CredentialRequired: true,
		SetupURL:           "https://aistudio.google.com/app/apikey",
		Probe:              ProbeAuthenticatedRead,
		Request: &ProbeRequest{
			Base: "base_url", Path: "/v1beta/models", Query: map[string]string{"pageSize": "1"},
			AuthHeader: "x-goog-api-key", Expect: "models",
		},
		APIs: []API{generateContent()},
	}
}
