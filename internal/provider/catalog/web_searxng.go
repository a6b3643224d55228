package catalog

// searXNG is a SearXNG instance, usually self-hosted, with the JSON output format enabled: search only, no credential.
func searXNG() Type {
	return webType("searxng", "SearXNG",
		object(props{"base_url": url("Instance URL; /search?format=json must be enabled.", "")}, "base_url"),
		empty(), false,
		"https://docs.searxng.org/admin/installation.html", OperationSearch)
}
