package catalog

// jina is Jina AI: fetch through the Reader (r.jina.ai) and search through s.jina.ai.
func jina() Type {
	return webType("jina", "Jina AI",
		object(props{
			"reader_url": url("Reader endpoint.", "https://r.jina.ai"),
			"search_url": url("Search endpoint.", "https://s.jina.ai"),
		}),
		apiKey("API key (jina_...)."), true,
		"https://jina.ai/api-dashboard/key-manager", OperationFetch, OperationSearch)
}
