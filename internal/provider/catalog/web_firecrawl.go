package catalog

// firecrawl is Firecrawl: fetch (POST /v1/scrape) and search (POST /v1/search).
func firecrawl() Type {
	return webType("firecrawl", "Firecrawl",
		object(props{"base_url": url("API base URL; change it for a self-hosted Firecrawl.", "https://api.firecrawl.dev")}),
		apiKey("API key (fc-...)."), true,
		"https://www.firecrawl.dev/app/api-keys", OperationFetch, OperationSearch)
}
