package types

// turbopuffer is turbopuffer; each memory is a namespace. Probe: query one page
// of a namespace no memory uses.
func turbopuffer() Type {
	return Type{
		ID: "turbopuffer", DisplayName: "turbopuffer", Kind: KindMemory,
		Config: object(props{
			"region":   pattern("Region, e.g. gcp-us-central1 or aws-us-east-1.", `^(gcp|aws|azure)-[a-z0-9-]+$`),
			"base_url": url("API URL override; https://{region}.turbopuffer.com when left out.", ""),
		}, "region"),
		Credential:         apiKey("API key."),
		CredentialRequired: true,
		SetupURL:           "https://turbopuffer.com/dashboard",
		Probe:              ProbeNamespacePage,
	}
}
