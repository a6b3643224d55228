package catalog

// tavily is Tavily: search (POST /search) and fetch (POST /extract).
func tavily() Type {
	return webType("tavily", "Tavily",
		object(props{"base_url": url("API base URL.", "https://api.tavily.com")}),
		apiKey("API key (tvly-...)."), true,
		"https://app.tavily.com/home", OperationSearch, OperationFetch)
}
