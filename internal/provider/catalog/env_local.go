package catalog

// localEnvironment runs commands directly on the worker's host, for
// development only; it is installed only when environments.local_enabled is set.
// There is nothing to create, stop or destroy, no credential and no vendor page.
// The test is unsupported (docs/decisions/0016-provider-tests.md).
func localEnvironment() Type {
	return envType(LocalType, "Local (development)", empty(), empty(), false, "", ProbeUnsupported, Environment{
		Schema: object(props{
			"workdir":         str("Directory on the worker's host the commands run in."),
			"timeout_seconds": timeoutSeconds(86400, 3600),
		}),
	})
}
