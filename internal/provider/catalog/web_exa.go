package catalog

// exa is Exa: search (POST /search) and fetch (POST /contents).
func exa() Type {
	return webType("exa", "Exa",
		object(props{"base_url": url("API base URL.", "https://api.exa.ai")}),
		apiKey("API key, sent as x-api-key."), true,
		"https://dashboard.exa.ai/api-keys", OperationSearch, OperationFetch)
}
