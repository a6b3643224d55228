package catalog

// serpAPI is SerpApi: search only.
func serpAPI() Type {
	return webType("serpapi", "SerpApi",
		object(props{
			"base_url": url("API base URL.", "https://serpapi.com"),
			"engine":   withDefault(str("Search engine SerpApi queries, e.g. google or bing."), "google"),
		}),
		apiKey("API key."), true,
		"https://serpapi.com/manage-api-key", OperationSearch)
}
