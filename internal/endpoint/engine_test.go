package endpoint

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apperr"
)

func TestCheckEngine(t *testing.T) {
	t.Parallel()
	r := newResolver()
	r.set("engine.example.com", "93.184.216.34")
	r.set("engine.internal", "10.0.0.5")
	p := &Policy{AllowedSockets: []string{"/var/run/docker.sock"}, AllowedPorts: []uint16{2376}, Resolver: r}
	ctx := t.Context()

	require.NoError(t, p.CheckEngine(ctx, "config.host", "unix:///var/run/docker.sock", false))
	require.NoError(t, p.CheckEngine(ctx, "config.host", "tcp://engine.example.com:2376", true))

	for raw, want := range map[string]string{
		"unix:///run/docker.sock":             "the socket is not allowed (list it in endpoint_policy.allowed_sockets)",
		"unix:///var/run/../run/docker.sock":  "a unix socket must be a clean absolute path",
		"unix://var/run/docker.sock":          "a unix socket must be a clean absolute path",
		"tcp://engine.example.com:2376/v1.47": "a tcp address is host:port, without a path",
		"tcp://user@engine.example.com:2376":  "a tcp address is host:port, without a path",
		"ssh://me@engine.example.com":         "the address must start with unix:// or tcp://",
		"tcp://engine.internal:2376":          "host resolves to a private or reserved address (add a prefix that covers it to endpoint_policy.allowed_prefixes)",
		"tcp://127.0.0.1:2376":                "",
		"tcp://engine.example.com:2375":       "",
	} {
		err := p.CheckEngine(ctx, "config.host", raw, true)
		if want == "" {
			require.Error(t, err, raw)
			continue
		}
		requireRefusedField(t, err, "config.host", want)
	}
	// Without TLS the engine is called over plain http, which needs the allowance.
	require.Error(t, p.CheckEngine(ctx, "config.host", "tcp://engine.example.com:2376", false))
	p.AllowHTTP = true
	require.NoError(t, p.CheckEngine(ctx, "config.host", "tcp://engine.example.com:2376", false))
}

func TestEngineClientRefusesWhatCheckEngineRefuses(t *testing.T) {
	t.Parallel()
	p := &Policy{AllowedPrefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	_, _, err := p.EngineClient("unix:///var/run/docker.sock", nil, time.Second)
	require.ErrorIs(t, err, ErrRefused)

	// A tcp engine goes through the guarded client: plain http needs the allowance.
	client, base, err := p.EngineClient("tcp://127.0.0.1:443", nil, time.Second)
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:443", base)
	_, err = client.Get(base + "/_ping")
	require.ErrorIs(t, err, ErrRefused)
}

func requireRefusedField(t *testing.T, err error, name, want string) {
	t.Helper()
	e, ok := apperr.As(err)
	require.True(t, ok, "not an apperr: %v", err)
	require.Equal(t, apperr.KindInvalidArgument, e.Kind)
	require.Equal(t, []apperr.Detail{{Field: name, Reason: want}}, e.Details)
}
