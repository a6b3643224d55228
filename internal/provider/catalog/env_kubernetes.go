package catalog

// kubernetes runs each environment as a pod in one namespace. Pods cannot be
// stopped, only deleted. The test is unsupported
// (docs/decisions/0016-provider-tests.md).
func kubernetes() Type {
	return envType("kubernetes", "Kubernetes", object(props{
		"api_server": url("API server URL, e.g. https://10.0.0.1:6443.", ""),
		"namespace":  withDefault(pattern("Namespace the pods are created in.", `^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`), "default"),
	}, "api_server"), object(props{
		"token":   secret("Bearer token of a service account allowed to manage pods in the namespace."),
		"ca_cert": secret("CA certificate (PEM) of the API server, when not publicly trusted."),
	}, "token"), true, "https://kubernetes.io/docs/tasks/configure-pod-container/configure-service-account/#manually-create-an-api-token-for-a-serviceaccount", ProbeUnsupported, Environment{
		Schema: object(props{
			"image":           image("Container image."),
			"cpu":             number("CPU request and limit in cores.", 0.1, 256),
			"memory_mb":       memoryMB(64, 1048576),
			"service_account": str("Service account of the pod."),
			"runtime_class":   str("RuntimeClass, e.g. gvisor or kata, for stronger isolation."),
			"timeout_seconds": timeoutSeconds(604800, 3600),
		}, "image"),
		ManagedInstances: true, Stop: false, Destroy: true,
	})
}
