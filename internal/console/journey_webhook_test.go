package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/revision"
	"github.com/svcdev/svc/internal/testfactory"
	"github.com/svcdev/svc/internal/webhook/webhooktest"
)

// An admin subscribes an endpoint in the browser (its secret shown once),
// finds the delivery the endpoint refused, reads its attempts, and
// redelivers it once the endpoint is back.
func TestBrowserAdminInspectsAFailedDeliveryAndRedeliversIt(t *testing.T) {
	t.Parallel()
	recv := webhooktest.NewReceiver(t)
	b := setup(t, func(c *config.Config) {
		c.EndpointPolicy.AllowHTTP = true
		c.EndpointPolicy.AllowedPrefixes = []string{"127.0.0.0/8"}
		c.EndpointPolicy.AllowedPorts = []int{int(recv.Port)}
		// One attempt: the refused delivery is dead at once.
		one := 1
		c.Outbox.ByKind["webhook"] = config.OutboxOverride{MaxAttempts: &one}
	})
	recv.Respond(http.StatusInternalServerError, "the receiver is down")
	c := b.newChrome(t)
	c.signIn(b.admin.Email, adminPassword)

	c.open(b.workspacePath("webhooks"))
	c.fill(`input[name=url]`, recv.URL("127.0.0.1", "/hooks"))
	c.click(`input[name=event_types][value="agent.revision_published"]`)
	c.click(`form.stack button[type=submit]`)
	secret := c.text(`#new-secret`)
	require.Regexp(t, `^whsec_`, secret)
	b.secret(secret)

	// An event the endpoint refuses.
	testfactory.Model(t, b.h.App.Pool, b.admin.Owner(), nil)
	ag, err := b.h.App.Agents.Create(t.Context(), b.admin.Caller("admin"), revision.CreateInput{Name: "hooked", Config: json.RawMessage(`{"model":"main"}`)})
	require.NoError(t, err)
	_, err = b.h.App.Agents.Publish(t.Context(), b.admin.Caller("admin"), revision.PublishInput{HeadID: ag.ID, Config: json.RawMessage(`{"model":"main","instructions":"Again."}`), MakeDefault: new(true)})
	require.NoError(t, err)
	// The harness holds the outbox's own passes; the test makes them.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	require.NoError(t, b.h.App.Outbox.Deliver(ctx))
	_, err = recv.WaitFor(ctx, 1)
	require.NoError(t, err)

	// The subscription's page lists the delivery; its page shows the
	// refused attempt with the endpoint's answer.
	c.open(b.workspacePath("webhooks"))
	c.follow(`table.list a[href*="/webhooks/sub_"]`)
	require.Eventually(t, func() bool {
		c.reload()
		has, _, _ := c.page.Has(`table.list a[href*="/deliveries/"]`)
		return has
	}, 20*time.Second, 200*time.Millisecond, "the delivery never showed")
	c.follow(`table.list a[href*="/deliveries/"]`)
	c.elText("h2", "Attempts")
	require.Eventually(t, func() bool {
		c.reload()
		has, _, _ := c.page.HasR(`td`, "^500$")
		return has
	}, 20*time.Second, 200*time.Millisecond, "the failed attempt never showed")
	c.screenshot("webhook-delivery")

	// The endpoint is back: redeliver, and the delivery is delivered.
	recv.Respond(http.StatusNoContent, "")
	c.clickText(`button`, "^Redeliver$")
	// The redirect's notice says the redelivery is recorded; reloading
	// before it would abort the form's request.
	c.elText(`p.notice`, "queued again")
	redeliver, cancelRedeliver := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancelRedeliver()
	require.Eventually(t, func() bool {
		require.NoError(t, b.h.App.Outbox.Deliver(redeliver))
		c.reload()
		has, _, _ := c.page.HasR(`.status`, "^delivered$")
		return has
	}, 30*time.Second, 200*time.Millisecond, "the redelivery never arrived")
	reqs := recv.Requests()
	page := c.page.MustInfo().URL
	delivery := page[strings.LastIndex(page, "/")+1:]
	var sent []string
	for _, r := range reqs {
		sent = append(sent, r.Header.Get("webhook-id"))
	}
	require.Equal(t, delivery, sent[len(sent)-1], "the redelivery is the same webhook")
	require.Contains(t, sent[:len(sent)-1], delivery, "and was refused before")
}
