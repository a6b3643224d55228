package catalog

// kagi is the Kagi Search API: search only.
func kagi() Type {
	return webType("kagi", "Kagi",
		object(props{"base_url": url("API base URL.", "https://kagi.com/api/v0")}),
		apiKey("API token, sent as Authorization: Bot <token>."), true,
		"https://kagi.com/settings?p=api", OperationSearch)
}
