package catalog

// modal is Modal sandboxes; they end (terminate) but cannot be stopped and
// resumed. The test is unsupported
// (docs/decisions/0016-provider-tests.md).
func modal() Type {
	return envType("modal", "Modal", object(props{
		"environment": str("Modal environment the sandboxes run in; the workspace default when left out."),
		"app_name":    withDefault(str("App the sandboxes belong to; created on first use."), "svc"),
	}), object(props{
		"token_id":     pattern("Token id (ak-...).", `^ak-[A-Za-z0-9]+$`),
		"token_secret": secret("Token secret (as-...)."),
	}, "token_id", "token_secret"), true, "https://modal.com/settings/tokens", ProbeUnsupported, Environment{
		Schema: object(props{
			"image":           image("Registry image, e.g. python:3.13-slim."),
			"cpu":             number("CPU cores reserved.", 0.125, 64),
			"memory_mb":       memoryMB(128, 344064),
			"gpu":             str("GPU type and count, e.g. T4 or A100:2."),
			"region":          str("Region to run in, e.g. us-east."),
			"timeout_seconds": timeoutSeconds(86400, 300),
		}, "image"),
		ManagedInstances: true, Stop: false, Destroy: true,
	})
}
