package catalog

// fireworks is Fireworks AI's inference API.
func fireworks() Type {
	return hostedChat("fireworks", "Fireworks AI", "https://api.fireworks.ai/inference/v1",
		"API key (fw_...).", "https://app.fireworks.ai/settings/users/api-keys")
}
