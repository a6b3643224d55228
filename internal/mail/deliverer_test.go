package mail_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/invitation"
	"github.com/svcdev/svc/internal/mail"
	"github.com/svcdev/svc/internal/outbox"
	"github.com/svcdev/svc/internal/session"
)

// The log transport, the default, records that a mail was due and to whom,
// but never its link: the token in it is a credential.
func TestLogTransportWithholdsTheLink(t *testing.T) {
	t.Parallel()
	ring := newRing(t)
	log, logs := newLogger()
	d, err := mail.NewDeliverer(mailConfig("log"), ring, log)
	require.NoError(t, err)

	for _, mk := range []func() (outbox.Claimed, string){
		func() (outbox.Claimed, string) { return invitationClaim(t, ring, nil) },
		func() (outbox.Claimed, string) { return resetClaim(t, ring) },
		func() (outbox.Claimed, string) { return signInClaim(t, ring) },
	} {
		c, link := mk()
		out := d.Deliver(t.Context(), c)
		require.NoError(t, out.Err)
		require.False(t, out.Permanent)

		u, err := url.Parse(link)
		require.NoError(t, err)
		token := u.Query().Get("token")
		require.NotEmpty(t, token)
		text := logs.String()
		require.NotContains(t, text, token)
		require.NotContains(t, text, u.RawQuery)
		require.NotContains(t, out.Response, token)
		// The line says what was due, so an operator can tell mail is not sent.
		line := lineWith(t, text, c.ID)
		require.Equal(t, "INFO", line["level"])
		require.Equal(t, "ada@example.com", line["to"])
		require.NotEmpty(t, line["subject"])
		require.Contains(t, line["msg"], "withheld")
	}
}

// lineWith returns the JSON log record whose delivery_id is deliveryID.
func lineWith(t *testing.T, logs, deliveryID string) map[string]any {
	t.Helper()
	for l := range strings.Lines(logs) {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &rec), l)
		if rec["delivery_id"] == deliveryID {
			return rec
		}
	}
	t.Fatalf("no log record for %s in:\n%s", deliveryID, logs)
	return nil
}

// A delivery that cannot be read, opened or rendered is permanent, and its
// error names the problem without the link.
func TestUndeliverableDeliveriesArePermanent(t *testing.T) {
	t.Parallel()
	ring := newRing(t)
	other := newRing(t)
	d := deliverer(t, mailConfig("log"), ring)

	withPayload := func(c outbox.Claimed, edit func(map[string]any)) outbox.Claimed {
		var m map[string]any
		require.NoError(t, json.Unmarshal(c.Payload, &m))
		edit(m)
		raw, err := json.Marshal(m)
		require.NoError(t, err)
		c.Payload = raw
		return c
	}
	inv := func(edit func(*invitation.MailPayload)) (outbox.Claimed, string) {
		return invitationClaim(t, ring, edit)
	}

	cases := []struct {
		name string
		make func() (outbox.Claimed, string)
		want string // a fragment of the error
	}{
		{"another kind", func() (outbox.Claimed, string) {
			c, l := inv(nil)
			c.Kind = outbox.KindWebhook
			return c, l
		}, `of kind "webhook"`},
		{"payload not JSON", func() (outbox.Claimed, string) {
			c, l := inv(nil)
			c.Payload = []byte("not json")
			return c, l
		}, "not a JSON object"},
		{"unknown template", func() (outbox.Claimed, string) {
			c, l := inv(nil)
			return withPayload(c, func(m map[string]any) { m["template"] = "newsletter" }), l
		}, `unknown template "newsletter"`},
		{"no template", func() (outbox.Claimed, string) {
			c, l := inv(nil)
			return withPayload(c, func(m map[string]any) { delete(m, "template") }), l
		}, `unknown template ""`},
		{"field of the wrong type", func() (outbox.Claimed, string) {
			c, l := inv(nil)
			return withPayload(c, func(m map[string]any) { m["role"] = 7 }), l
		}, "decode the payload"},
		{"no sealed part", func() (outbox.Claimed, string) {
			c, l := inv(nil)
			c.Sealed = nil
			return c, l
		}, "no sealed link"},
		{"sealed for another invitation", func() (outbox.Claimed, string) {
			c, l := inv(nil)
			return withPayload(c, func(m map[string]any) { m["invitation_id"] = id.New(id.Invitation) }), l
		}, "open the sealed link"},
		{"sealed with a key not in the ring", func() (outbox.Claimed, string) {
			c, l := inv(nil)
			var p invitation.MailPayload
			require.NoError(t, json.Unmarshal(c.Payload, &p))
			c.Sealed = seal(t, other, invitation.MailSecrets{InvitationURL: l}, invitation.MailAAD(p.InvitationID))
			return c, l
		}, "unknown key"},
		{"reset sealed for another mail link", func() (outbox.Claimed, string) {
			c, l := resetClaim(t, ring)
			c.Sealed = seal(t, ring, session.ResetMailSecret{ResetURL: l}, session.MailAAD(id.New(id.MailLink)))
			return c, l
		}, "open the sealed link"},
		{"sealed part not the expected object", func() (outbox.Claimed, string) {
			c, l := inv(nil)
			var p invitation.MailPayload
			require.NoError(t, json.Unmarshal(c.Payload, &p))
			c.Sealed = seal(t, ring, []string{l}, invitation.MailAAD(p.InvitationID))
			return c, l
		}, "not the expected JSON object"},
		{"link not a web address", func() (outbox.Claimed, string) {
			c, _ := inv(nil)
			var p invitation.MailPayload
			require.NoError(t, json.Unmarshal(c.Payload, &p))
			l := "javascript:alert('SeCrEt')"
			c.Sealed = seal(t, ring, invitation.MailSecrets{InvitationURL: l}, invitation.MailAAD(p.InvitationID))
			return c, l
		}, "not an absolute http(s) URL"},
		{"line break in the recipient", func() (outbox.Claimed, string) {
			return inv(func(p *invitation.MailPayload) { p.To = "ada@example.com\r\nBcc: eve@example.com" })
		}, "to contains a line break"},
		{"line break in the inviter's name", func() (outbox.Claimed, string) {
			return inv(func(p *invitation.MailPayload) { p.InvitedBy = "Grace\nBcc: eve@example.com" })
		}, "invited_by contains a line break"},
		{"line break in the organization name", func() (outbox.Claimed, string) {
			return inv(func(p *invitation.MailPayload) { p.OrganizationName = "Acme\r" })
		}, "organization_name contains a line break"},
		{"line break in the workspace name", func() (outbox.Claimed, string) {
			return inv(func(p *invitation.MailPayload) { ws := "R\nD"; p.WorkspaceName = &ws })
		}, "workspace_name contains a line break"},
		{"recipient with a display name", func() (outbox.Claimed, string) {
			return inv(func(p *invitation.MailPayload) { p.To = "Ada <ada@example.com>" })
		}, "not a single mail address"},
		{"two recipients", func() (outbox.Claimed, string) {
			return inv(func(p *invitation.MailPayload) { p.To = "ada@example.com, eve@example.com" })
		}, "not a single mail address"},
		{"no recipient", func() (outbox.Claimed, string) {
			return inv(func(p *invitation.MailPayload) { p.To = "" })
		}, "to is empty"},
		{"delivery id unfit for a file name", func() (outbox.Claimed, string) {
			c, l := inv(nil)
			c.ID = "dlv_../../etc/passwd"
			return c, l
		}, "is not a delivery id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, link := tc.make()
			out := d.Deliver(t.Context(), c)
			require.Error(t, out.Err)
			require.True(t, out.Permanent, out.Err.Error())
			require.Contains(t, out.Err.Error(), tc.want)
			require.NotContains(t, out.Err.Error(), link)
			require.NotContains(t, out.Err.Error(), "SeCrEt", "the error never quotes the link's token")
		})
	}
}

func TestNewDelivererRefusesBadConfiguration(t *testing.T) {
	t.Parallel()
	ring := newRing(t)
	log, _ := newLogger()

	_, err := mail.NewDeliverer(mailConfig("log"), nil, log)
	require.ErrorContains(t, err, "no key ring")

	_, err = mail.NewDeliverer(mailConfig("log"), ring, nil)
	require.ErrorContains(t, err, "no logger")

	_, err = mail.NewDeliverer(mailConfig("log"), ring, log, mail.WithSMTPTimeout(0))
	require.ErrorContains(t, err, "time-out")

	cfg := mailConfig("log")
	cfg.From = "not an address"
	_, err = mail.NewDeliverer(cfg, ring, log)
	require.ErrorContains(t, err, "mail.from")

	cfg = mailConfig("carrier-pigeon")
	_, err = mail.NewDeliverer(cfg, ring, log)
	require.ErrorContains(t, err, "mail.transport")

	cfg = mailConfig("smtp")
	cfg.SMTPHost, cfg.SMTPTLS, cfg.SMTPUsername, cfg.SMTPPassword = "mail.example.com", "none", "svc", "hunter2"
	_, err = mail.NewDeliverer(cfg, ring, log)
	require.ErrorContains(t, err, "never sent unencrypted")
	require.NotContains(t, err.Error(), "hunter2")

	cfg.SMTPUsername = ""
	_, err = mail.NewDeliverer(cfg, ring, log)
	require.ErrorContains(t, err, "mail.smtp_username is empty")
	require.NotContains(t, err.Error(), "hunter2")
}
