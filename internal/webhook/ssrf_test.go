package webhook_test

import (
	"net/http"
	"testing"

	"code.dny.dev/ssrf"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/outbox"
	"github.com/svcdev/svc/internal/webhook"
	"github.com/svcdev/svc/internal/webhook/webhooktest"
)

// requireRefused checks an outcome is the endpoint policy's refusal, retried
// like any failure, and names no address.
func requireRefused(t *testing.T, out outbox.Outcome, secret string) {
	t.Helper()
	require.Error(t, out.Err)
	require.ErrorIs(t, out.Err, endpoint.ErrRefused)
	require.Regexp(t, `^refused by the endpoint policy: (the host's address is private or reserved|must not point to an? [a-z-]+ address) `+
		`\(add a prefix that covers it to endpoint_policy\.allowed_prefixes\)$`, out.Err.Error())
	require.False(t, out.Permanent)
	require.Zero(t, out.StatusCode)
	requireSafe(t, out, secret)
}

// TestDeliverySSRFRefusals: the subscriptions were saved under a looser
// policy (or, for rebinding, passed the same policy when saved); the
// sender's guarded client refuses every private destination when it dials,
// so the receiver listening there never sees a request.
func TestDeliverySSRFRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	recv := webhooktest.NewReceiver(t)
	r := newResolver()
	r.sequence("rebind.test", "93.184.216.34", "127.0.0.1")
	// The sender's policy: plain HTTP and the receiver's port, but no
	// private address at all.
	strict := &endpoint.Policy{AllowHTTP: true, AllowedPorts: []uint16{recv.Port}, Resolver: r}
	d := b.deliverer(t, strict)

	for _, tc := range []struct {
		name, url string
		dialled   bool // refused by the connect-time guard (not the URL rules)
	}{
		{"loopback", recv.URL("127.0.0.1", "/"), false},
		{"loopback v6", recv.URL("::1", "/"), false},
		{"mapped loopback", recv.URL("::ffff:127.0.0.1", "/"), false},
		{"unspecified", recv.URL("0.0.0.0", "/"), false},
		{"metadata", "http://169.254.169.254/latest/meta-data/", false},
		{"link-local", recv.URL("169.254.10.10", "/"), false},
		{"name resolving to loopback", recv.URL("loopback.test", "/"), true},
		{"name resolving to private", recv.URL("private.test", "/"), true},
		{"name resolving to metadata", "http://metadata.test/latest/meta-data/", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sub, secret := b.subscribe(t, anywhere(t, tc.url, r), tc.url, webhook.AgentRevisionPublished)
			ids := b.emit(t, b.admin.WorkspaceID, event(tc.name))
			require.Len(t, ids, 1)
			out := d.Deliver(t.Context(), b.claimed(t, ids[0]))
			requireRefused(t, out, secret)
			if tc.dialled {
				require.ErrorIs(t, out.Err, ssrf.ErrProhibitedIP, "refused at connect time")
			}
			_, err := b.pool.Exec(t.Context(), `DELETE FROM subscription WHERE id = $1`, sub)
			require.NoError(t, err)
		})
	}

	// DNS rebinding: the name was public when saved under the sender's own
	// policy, and resolves to loopback when dialled.
	u := recv.URL("rebind.test", "/")
	sub, secret := b.subscribe(t, strict, u, webhook.AgentRevisionPublished)
	ids := b.emit(t, b.admin.WorkspaceID, event("rebind"))
	out := d.Deliver(t.Context(), b.claimed(t, ids[0]))
	requireRefused(t, out, secret)
	require.ErrorIs(t, out.Err, ssrf.ErrProhibitedIP, "the second resolution is checked where it is dialled")
	enabled, _ := b.subscriptionState(t, sub)
	require.True(t, enabled, "a refusal is an ordinary failure")

	require.Empty(t, recv.Requests(), "no refused request reached the receiver")
}

// TestDeliveryRedirectToPrivateNotFollowed: an allowed endpoint that
// redirects to a private address gets its 3xx recorded; the private address
// is never requested.
func TestDeliveryRedirectToPrivateNotFollowed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	private := webhooktest.NewReceiverOn(t, "127.0.0.2:0")
	origin := webhooktest.NewReceiver(t)
	origin.Handle(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, private.URL("127.0.0.2", "/steal"), http.StatusFound)
	})
	// Only the origin's address is allowed; 127.0.0.2 stays private.
	policy := &endpoint.Policy{AllowHTTP: true, AllowedPorts: []uint16{origin.Port, private.Port}, Resolver: newResolver(),
		AllowedPrefixes: prefixes("127.0.0.1/32")}
	_, secret := b.subscribe(t, policy, origin.URL("hooks.test", "/"), webhook.AgentRevisionPublished)
	ids := b.emit(t, b.admin.WorkspaceID, event("redirect"))
	out := b.deliverer(t, policy).Deliver(t.Context(), b.claimed(t, ids[0]))
	require.Error(t, out.Err)
	require.Equal(t, http.StatusFound, out.StatusCode)
	require.Equal(t, "the endpoint answered 302; redirects are not followed", out.Err.Error())
	requireSafe(t, out, secret)
	require.Len(t, origin.Requests(), 1)
	require.Empty(t, private.Requests())
}
