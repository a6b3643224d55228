package catalog

// docker is a Docker Engine (or compatible) the deployment can reach: the
// container-engine type. Probe: GET /_ping on the engine; nothing is created.
func docker() Type {
	tls := object(props{
		"tls_ca":   secret("CA certificate (PEM) that signed the engine's certificate."),
		"tls_cert": secret("Client certificate (PEM)."),
		"tls_key":  secret("Client private key (PEM)."),
	})
	tls.doc["dependentRequired"] = map[string]any{"tls_cert": []string{"tls_key"}, "tls_key": []string{"tls_cert"}}
	t := envType("docker", "Docker", object(props{
		"host":        withDefault(pattern("Engine address: unix:///path/to/socket, or tcp://host:port (over TLS when the credential holds a client certificate).", `^(unix:///|tcp://)\S+$`), "unix:///var/run/docker.sock"),
		"api_version": pattern("Engine API version to pin, e.g. 1.47; negotiated when left out.", `^1\.[0-9]{1,3}$`),
		"network":     str("Network the containers join; none when left out. Only the networks the operator lists in environments.docker_networks are accepted."),
	}), tls, false, "https://docs.docker.com/engine/security/protect-access/", ProbeEnginePing, Environment{
		Schema: object(props{
			"image":           image("Container image, e.g. python:3.13-slim."),
			"cpu":             number("CPUs (fractions allowed).", 0.1, 256),
			"memory_mb":       memoryMB(64, 1048576),
			"workdir":         str("Working directory inside the container."),
			"user":            str("User the commands run as: a numeric uid[:gid] other than 0; the image's own user (which must be one too) when left out. Root and names only when the operator sets environments.docker_allow_root."),
			"timeout_seconds": timeoutSeconds(604800, 3600),
		}, "image"),
		ManagedInstances: true, Stop: true, Destroy: true,
	})
	t.Engine = "host"
	return t
}
