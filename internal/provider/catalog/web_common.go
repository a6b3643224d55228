package catalog

// webType declares a web vendor. The provider test of web types is always
// unsupported (docs/decisions/0016-provider-tests.md).
func webType(id, name string, config, credential *Schema, credentialRequired bool, setupURL string, ops ...Operation) Type {
	return Type{
		ID: id, DisplayName: name, Kind: KindWeb,
		Config: config, Credential: credential, CredentialRequired: credentialRequired,
		SetupURL: setupURL, Probe: ProbeUnsupported, Operations: ops,
	}
}
