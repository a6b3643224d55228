package catalog

// daytona is Daytona sandboxes. The test is unsupported
// (docs/decisions/0016-provider-tests.md).
func daytona() Type {
	return envType("daytona", "Daytona", object(props{
		"api_url": url("API URL.", "https://app.daytona.io/api"),
		"target":  enum("Region the sandboxes run in.", "us", "eu"),
	}), apiKey("API key (dtn_...)."), true, "https://app.daytona.io/dashboard/keys", ProbeUnsupported, Environment{
		Schema: object(props{
			"image":               image("Container image; left out, the default snapshot is used."),
			"snapshot":            str("Snapshot to start from instead of an image."),
			"cpu":                 integer("vCPUs.", 1, 64),
			"memory_gb":           integer("Memory in GiB.", 1, 256),
			"disk_gb":             integer("Disk in GiB.", 1, 1024),
			"auto_stop_minutes":   integer("Stop after this many idle minutes; 0 never.", 0, 43200),
			"auto_delete_minutes": integer("Delete this many minutes after stopping; left out, never.", 0, 43200),
		}),
		ManagedInstances: true, Stop: true, Destroy: true,
	})
}
