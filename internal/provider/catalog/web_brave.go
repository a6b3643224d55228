package catalog

// brave is the Brave Search API: web search only.
func brave() Type {
	return webType("brave", "Brave Search",
		object(props{
			"base_url": url("API base URL.", "https://api.search.brave.com/res/v1"),
			"country":  pattern("Two-letter country code to bias results toward.", `^[A-Za-z]{2}$`),
		}),
		apiKey("Subscription token, sent as X-Subscription-Token."), true,
		"https://api-dashboard.search.brave.com/app/keys", OperationSearch)
}
