package catalog

// googleCSE is the Google Custom Search JSON API: search only, within a Programmable Search Engine.
func googleCSE() Type {
	return webType("google_cse", "Google Custom Search",
		object(props{
			"search_engine_id": str("Programmable Search Engine id (the cx parameter)."),
			"base_url":         url("API endpoint.", "https://www.googleapis.com/customsearch/v1"),
		}, "search_engine_id"),
		apiKey("Google Cloud API key with the Custom Search API enabled."), true,
		"https://developers.google.com/custom-search/v1/introduction", OperationSearch)
}
