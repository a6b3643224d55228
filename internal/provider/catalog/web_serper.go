package catalog

// serper is Serper, Google search results as JSON: search only.
func serper() Type {
	return webType("serper", "Serper",
		object(props{
			"base_url": url("API base URL.", "https://google.serper.dev"),
			"gl":       pattern("Country code (Google's gl).", `^[a-z]{2}$`),
			"hl":       pattern("Interface language (Google's hl).", `^[a-z]{2}(-[a-zA-Z]{2})?$`),
		}),
		apiKey("API key, sent as X-API-KEY."), true,
		"https://serper.dev/api-key", OperationSearch)
}
