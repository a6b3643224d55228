package catalog

// turbopuffer is turbopuffer; each memory is a namespace. Probe: list one page
// of the namespaces whose names start with a namespace no memory uses (GET
// {base_url}/v1/namespaces?prefix=...). A deleted memory's namespace is deleted
// with DELETE {base_url}/v2/namespaces/{namespace}, turbopuffer's current
// delete (listing namespaces is still v1 in the same API).
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
		Request: &ProbeRequest{
			Base: "base_url", Fallback: "https://{region}.turbopuffer.com",
			Path: "/v1/namespaces", Query: map[string]string{"prefix": "{namespace}", "page_size": "1"},
			AuthHeader: "Authorization", AuthPrefix: "Bearer ", Expect: "namespaces",
		},
		NamespaceDelete: "/v2/namespaces/{namespace}",
	}
}
