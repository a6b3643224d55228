package catalog

// awsBedrock is Amazon Bedrock, a cloud platform: requests are SigV4-signed,
// and listing foundation models proves little about model access, so the test
// is unsupported (docs/decisions/0016-provider-tests.md).
func awsBedrock() Type {
	return Type{
		ID: "aws_bedrock", DisplayName: "Amazon Bedrock", Kind: KindModel,
		Config: object(props{
			"region":   pattern("AWS region, e.g. us-east-1.", `^[a-z]{2}(-gov)?-[a-z]+-[0-9]$`),
			"endpoint": url("Bedrock runtime endpoint override, e.g. a VPC endpoint.", ""),
		}, "region"),
		Credential: object(props{
			"access_key_id":     pattern("IAM access key id (AKIA... or ASIA...).", `^[A-Z0-9]{16,128}$`),
			"secret_access_key": secret("IAM secret access key."),
			"session_token":     secret("Session token of temporary credentials."),
		}, "access_key_id", "secret_access_key"),
		CredentialRequired: true,
		SetupURL:           "https://console.aws.amazon.com/iam/home#/security_credentials",
		Probe:              ProbeUnsupported,
		APIs:               []API{converse()},
	}
}
