package catalog

// runloop is Runloop devboxes; suspending serves as stop. The test is
// unsupported (docs/decisions/0016-provider-tests.md).
func runloop() Type {
	return envType("runloop", "Runloop", object(props{
		"base_url": url("API base URL.", "https://api.runloop.ai"),
	}), apiKey("API key."), true, "https://platform.runloop.ai/settings", ProbeUnsupported, Environment{
		Schema: object(props{
			"blueprint_name":     str("Blueprint the devbox is built from; the default image when left out."),
			"snapshot_id":        str("Disk snapshot to start from instead of a blueprint."),
			"resource_size":      enum("Devbox size.", "X_SMALL", "SMALL", "MEDIUM", "LARGE", "X_LARGE", "XX_LARGE"),
			"keep_alive_seconds": integer("Idle time after which Runloop suspends or shuts down the devbox.", 60, 172800),
		}),
		ManagedInstances: true, Stop: true, Destroy: true,
	})
}
