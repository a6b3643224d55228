package catalog

// googleVertex is Vertex AI, a cloud platform: Gemini models through
// generateContent and Claude models through Messages. The test is unsupported
// (docs/decisions/0016-provider-tests.md).
func googleVertex() Type {
	return Type{
		ID: "google_vertex", DisplayName: "Google Vertex AI", Kind: KindModel,
		Config: object(props{
			"project_id": pattern("Google Cloud project id.", `^[a-z][a-z0-9-]{4,28}[a-z0-9]$`),
			"location":   withDefault(pattern("Region such as us-central1, or global.", `^[a-z0-9-]+$`), "global"),
		}, "project_id"),
		Credential: object(props{
			"service_account_json": func() map[string]any {
				s := secret("Service account key file (JSON) with the Vertex AI User role.")
				s["contentMediaType"] = "application/json"
				return s
			}(),
		}, "service_account_json"),
		CredentialRequired: true,
		SetupURL:           "https://console.cloud.google.com/iam-admin/serviceaccounts",
		Probe:              ProbeUnsupported,
		APIs:               []API{generateContent(), messages()},
	}
}
