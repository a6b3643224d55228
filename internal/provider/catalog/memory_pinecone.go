package catalog

// pinecone is a Pinecone index; each memory is a namespace in it. Probe: list
// one page of vector ids in a namespace no memory uses (GET
// {index_host}/vectors/list). A deleted memory's namespace is deleted with
// DELETE {index_host}/namespaces/{namespace} (data plane API 2025-04, serverless
// indexes, as the probe's list is).
func pinecone() Type {
	return Type{
		ID: "pinecone", DisplayName: "Pinecone", Kind: KindMemory,
		Config: object(props{
			"index_host": url("Host of the index, e.g. https://my-index-abc123.svc.aped-4627-b74a.pinecone.io.", ""),
		}, "index_host"),
		Credential:         apiKey("API key, sent as Api-Key."),
		CredentialRequired: true,
		SetupURL:           "https://app.pinecone.io/organizations/-/projects",
		Probe:              ProbeNamespacePage,
		Request: &ProbeRequest{
			Base: "index_host", Path: "/vectors/list", Query: map[string]string{"namespace": "{namespace}", "limit": "1"},
			Headers:    map[string]string{"X-Pinecone-API-Version": "2025-04"},
			AuthHeader: "Api-Key", Expect: "namespace",
		},
		NamespaceDelete: "/namespaces/{namespace}",
	}
}
