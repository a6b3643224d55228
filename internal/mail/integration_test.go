package mail_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/client"
	"github.com/svcdev/svc/internal/apitest"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/mail"
	"github.com/svcdev/svc/internal/outbox"
	"github.com/svcdev/svc/internal/session"
	"github.com/svcdev/svc/internal/testfactory"
)

const publicURL = "https://svc.example.com"

// pendingMail reads the pending identity_mail delivery whose payload field
// key is value, as the outbox engine claims it.
func pendingMail(t *testing.T, h *apitest.Harness, key, value string) outbox.Claimed {
	t.Helper()
	var (
		c  outbox.Claimed
		ws *string
	)
	require.NoError(t, h.App.Pool.QueryRow(t.Context(), `
		SELECT id, kind, workspace_id, payload, sealed, created_at, now()
		FROM outbox WHERE kind = 'identity_mail' AND status = 'pending' AND payload->>$1 = $2`, key, value).
		Scan(&c.ID, &c.Kind, &ws, &c.Payload, &c.Sealed, &c.CreatedAt, &c.ClaimedAt))
	if ws != nil {
		c.WorkspaceID = *ws
	}
	c.Attempt = 1
	return c
}

// The mail of an invitation made through the API, and of a password reset
// asked for through the session service, reach a real SMTP server with their
// links, and only the sealed copies of those links are in the database.
func TestIdentityMailFromTheProducersReachesSMTP(t *testing.T) {
	t.Parallel()
	h := apitest.Start(t, apitest.Options{PauseSweeps: true, Configure: func(c *config.Config) {
		c.Server.PublicURL = publicURL
	}})
	admin := testfactory.Bootstrap(t, h.App.Pool)
	sink := startSink(t, sinkOptions{Username: "svc", Password: "hunter2"})
	cfg := sink.config("starttls")
	cfg.From = "Acme svc <svc@acme.example>"
	log, _ := newLogger()
	d, err := mail.NewDeliverer(cfg, h.App.Keyring, log, mail.WithRootCAs(sink.roots))
	require.NoError(t, err)

	// An invitation, through the API.
	resp, err := h.Client(t, admin.APIKey).CreateWorkspaceInvitationWithResponse(t.Context(), admin.WorkspaceID, nil,
		client.CreateInvitationRequest{Email: "ada@example.com", Role: "editor"})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, resp.StatusCode(), string(resp.Body))
	created := resp.JSON201

	c := pendingMail(t, h, "invitation_id", created.Invitation.Id)
	require.NotContains(t, string(c.Payload), tokenOf(t, created.InvitationUrl))
	out := d.Deliver(t.Context(), c)
	require.NoError(t, out.Err)

	got := sink.mails()
	require.Len(t, got, 1)
	require.Equal(t, "svc@acme.example", got[0].From)
	require.Equal(t, []string{"ada@example.com"}, got[0].To)
	m := parseMail(t, got[0].Data)
	require.Equal(t, `"Acme svc" <svc@acme.example>`, m.Header.Get("From"))
	require.Equal(t, "Invitation to the workspace Default workspace of Default organization", m.subject(t))
	require.Equal(t, "<"+c.ID+"@acme.example>", m.Header.Get("Message-Id"))
	require.Contains(t, m.Text, "\r\n"+created.InvitationUrl+"\r\n")
	require.Contains(t, m.Text, admin.Email+" invited you to join the workspace")
	require.Contains(t, m.HTML, `href="`+created.InvitationUrl+`"`)
	require.Contains(t, m.Text, created.Invitation.ExpiresAt.UTC().Format("2 January 2006 at 15:04 UTC"))

	// A password reset, through the session service the console uses.
	sessions, err := session.NewService(session.Options{Pool: h.App.Pool, Keyring: h.App.Keyring, Log: log,
		PublicURL: publicURL, SessionTTL: time.Hour, MailLinkTTL: time.Hour})
	require.NoError(t, err)
	require.NoError(t, sessions.RequestPasswordReset(t.Context(), session.ResetRequestInput{Email: admin.Email}))
	c = pendingMail(t, h, "template", session.TemplatePasswordReset)
	out = d.Deliver(t.Context(), c)
	require.NoError(t, out.Err)

	got = sink.mails()
	require.Len(t, got, 2)
	require.Equal(t, []string{admin.Email}, got[1].To)
	m = parseMail(t, got[1].Data)
	require.Equal(t, "Reset your password", m.subject(t))
	link := linkIn(t, m.Text, publicURL+"/password/reset?token=")
	// The mailed link is a working one: the console accepts its token.
	_, err = sessions.CheckResetLink(t.Context(), tokenOf(t, link))
	require.NoError(t, err)
	require.Contains(t, m.HTML, `href="`+link+`"`)
}

// linkIn finds the line of text that starts with prefix.
func linkIn(t *testing.T, text, prefix string) string {
	t.Helper()
	for l := range strings.Lines(text) {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, prefix) {
			return l
		}
	}
	t.Fatalf("no line starting with %s in:\n%s", prefix, text)
	return ""
}

// tokenOf is the token query parameter of a link.
func tokenOf(t *testing.T, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	require.NoError(t, err)
	tok := u.Query().Get("token")
	require.NotEmpty(t, tok)
	return tok
}
