package catalog

// e2b is E2B cloud sandboxes; pausing serves as stop. The test is
// unsupported (docs/decisions/0016-provider-tests.md).
func e2b() Type {
	return envType("e2b", "E2B", object(props{
		"api_url": url("API URL.", "https://api.e2b.app"),
	}), apiKey("API key (e2b_...)."), true, "https://e2b.dev/dashboard?tab=keys", ProbeUnsupported, Environment{
		Schema: object(props{
			"template":        withDefault(str("Sandbox template id or name; the template fixes CPU and memory."), "base"),
			"timeout_seconds": timeoutSeconds(86400, 300),
		}),
		ManagedInstances: true, Stop: true, Destroy: true,
	})
}
