package docker

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/id"
)

func TestNonRootID(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"1000", "1000:1000", "65534:65534", "1:2", "01000"} {
		require.True(t, nonRootID(u), u)
	}
	for _, u := range []string{"", "0", "00", "0:0", "1000:0", "0:1000", "root", "root:root", "app", "1000:app", "1000:", ":1000",
		"-1", "+5", "4294967296", "1000:1000:1", " 1000"} {
		require.False(t, nonRootID(u), u)
	}
}

// refusal asserts err is the Guard's refusal of field, naming key.
func refusal(t *testing.T, err error, field, key string) {
	t.Helper()
	require.ErrorIs(t, err, ErrInvalidConfig)
	var r *Refusal
	require.True(t, errors.As(err, &r), "%v", err)
	require.Equal(t, field, r.Field)
	require.Contains(t, r.Reason, key)
}

func TestCreateRefusesNetworksTheOperatorDidNotList(t *testing.T) {
	t.Parallel()
	for _, network := range []string{"host", "container:svc-env_other", "container:3f1c9a7e2b4d", "bridge", "default", "tenant-b-net"} {
		t.Run(network, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.spec.Provider = json.RawMessage(`{"host":"unix://` + b.engine.Socket + `","network":"` + network + `"}`)
			_, err := b.driver.Create(t.Context(), b.spec)
			refusal(t, err, "network", KeyNetworks)
			require.Empty(t, b.engine.Requests(), "nothing is asked of the engine")
		})
	}
}

func TestCreateRefusesRootAndNamedUsers(t *testing.T) {
	t.Parallel()
	for _, user := range []string{"root", "0", "0:0", "1000:0", "root:1000", "app"} {
		t.Run(user, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.spec.Template = json.RawMessage(`{"image":"alpine:3.21","user":"` + user + `"}`)
			_, err := b.driver.Create(t.Context(), b.spec)
			refusal(t, err, "user", KeyAllowRoot)
			require.Empty(t, b.engine.Requests())
		})
	}
}

func TestCreateRefusesAnImageThatRunsAsRootWhenTheTemplateNamesNoUser(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.engine.imageUsers["python:3.13-slim"] = "0:0"
	for _, image := range []string{"alpine:3.21", "python:3.13-slim"} {
		b.spec.Template = json.RawMessage(`{"image":"` + image + `"}`)
		_, err := b.driver.Create(t.Context(), b.spec)
		refusal(t, err, "user", KeyAllowRoot)
		require.Contains(t, err.Error(), image)
	}
	require.NotContains(t, strings.Join(b.engine.Requests(), " "), "POST /containers/create", "no container is made")
	require.Contains(t, b.engine.Requests(), "GET /images/alpine:3.21/json", "the pulled image is inspected for its user")

	// An image whose own user is a numeric non-root id is fine.
	b.spec.Template = json.RawMessage(`{"image":"ghcr.io/acme/tools:1.2"}`)
	inst, _ := b.open(t)
	require.Empty(t, b.engine.container(inst.ContainerID()).config.User, "the image's user is kept")
}

func TestTheOperatorCanAllowHostNetworksAndRoot(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.driver.guard = Guard{Networks: []string{"host"}, AllowRoot: true}
	b.spec.Provider = json.RawMessage(`{"host":"unix://` + b.engine.Socket + `","network":"host"}`)
	b.spec.Template = json.RawMessage(`{"image":"alpine:3.21","user":"root"}`)
	inst, _ := b.open(t)
	cfg := b.engine.container(inst.ContainerID()).config
	require.Equal(t, "host", cfg.HostConfig.NetworkMode)
	require.Equal(t, "root", cfg.User)
	require.Empty(t, cfg.HostConfig.SecurityOpt, "root is allowed, so set-uid programs are too")

	// An image running as root, with no user in the template.
	b.spec.Template = json.RawMessage(`{"image":"python:3.13-slim"}`)
	b.spec.EnvironmentID = id.New(id.Environment)
	_, err := b.driver.Create(t.Context(), b.spec)
	require.NoError(t, err)
}
