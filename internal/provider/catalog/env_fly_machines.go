package catalog

// flyMachines is Fly.io Machines in one app. The test is unsupported
// (docs/decisions/0016-provider-tests.md).
func flyMachines() Type {
	return envType("fly_machines", "Fly Machines", object(props{
		"app_name": pattern("Fly app the machines are created in.", `^[a-z0-9][a-z0-9-]{1,62}$`),
		"base_url": url("Machines API URL; http://_api.internal:4280 from inside Fly's network.", "https://api.machines.dev"),
		"region":   pattern("Default region code, e.g. ams.", `^[a-z]{3}$`),
	}, "app_name"), object(props{
		"api_token": secret("Deploy or org token (FlyV1 ...), from `fly tokens create`."),
	}, "api_token"), true, "https://fly.io/docs/security/tokens/", ProbeUnsupported, Environment{
		Schema: object(props{
			"image":           image("Container image."),
			"cpu_kind":        withDefault(enum("CPU class.", "shared", "performance"), "shared"),
			"cpus":            integer("vCPUs.", 1, 16),
			"memory_mb":       memoryMB(256, 131072),
			"region":          pattern("Region code, overriding the provider's.", `^[a-z]{3}$`),
			"timeout_seconds": timeoutSeconds(604800, 3600),
		}, "image"),
		ManagedInstances: true, Stop: true, Destroy: true,
	})
}
