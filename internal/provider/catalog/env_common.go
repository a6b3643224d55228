package catalog

// envType declares an environment vendor. Only the container-engine type can be
// probed; every other environment type's test is unsupported
// (docs/decisions/0016-provider-tests.md), which the vendor files state explicitly.
func envType(id, name string, config, credential *Schema, credentialRequired bool, setupURL string, probe ProbeKind, env Environment) Type {
	return Type{
		ID: id, DisplayName: name, Kind: KindEnvironment,
		Config: config, Credential: credential, CredentialRequired: credentialRequired,
		SetupURL: setupURL, Probe: probe, Environment: &env,
	}
}

// The members environment schemas share.
func image(desc string) map[string]any { return str(desc) }

func timeoutSeconds(hi, def int) map[string]any {
	return withDefault(integer("Lifetime of an environment in seconds, after which the vendor ends it.", 1, hi), def)
}

func memoryMB(lo, hi int) map[string]any { return integer("Memory in MiB.", lo, hi) }
