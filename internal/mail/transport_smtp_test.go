package mail_test

import (
	"context"
	"net"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/invitation"
	"github.com/svcdev/svc/internal/mail"
	"github.com/svcdev/svc/internal/outbox"
)

// Through STARTTLS, authenticated with PLAIN: the server receives the whole
// message, encrypted, from the configured sender to the payload's recipient.
func TestSMTPStartTLSWithAuth(t *testing.T) {
	t.Parallel()
	ring := newRing(t)
	sink := startSink(t, sinkOptions{Username: "svc", Password: "hunter2"})
	d := deliverer(t, sink.config("starttls"), ring, mail.WithRootCAs(sink.roots))

	c, link := invitationClaim(t, ring, nil)
	out := d.Deliver(t.Context(), c)
	require.NoError(t, out.Err)
	require.Contains(t, out.Response, "OK", "the server's answer is kept on the attempt")

	got := sink.mails()
	require.Len(t, got, 1)
	require.True(t, got[0].TLS, "sent after STARTTLS")
	require.Equal(t, "svc", got[0].User, "authenticated")
	require.Equal(t, "noreply@localhost", got[0].From)
	require.Equal(t, []string{"ada@example.com"}, got[0].To)
	m := parseMail(t, got[0].Data)
	require.Equal(t, "Invitation to the workspace Research of Acme", m.subject(t))
	require.Equal(t, "<"+c.ID+"@localhost>", m.Header.Get("Message-Id"))
	require.Contains(t, m.Text, link)
	require.Contains(t, m.HTML, strings.ReplaceAll(link, "&", "&amp;"))
}

// Implicit TLS (port 465 style) works too, with every template.
func TestSMTPImplicitTLS(t *testing.T) {
	t.Parallel()
	ring := newRing(t)
	sink := startSink(t, sinkOptions{ImplicitTLS: true, Username: "svc", Password: "hunter2"})
	d := deliverer(t, sink.config("tls"), ring, mail.WithRootCAs(sink.roots))

	reset, resetLink := resetClaim(t, ring)
	signIn, signInLink := signInClaim(t, ring)
	for _, c := range []outbox.Claimed{reset, signIn} {
		require.NoError(t, d.Deliver(t.Context(), c).Err)
	}
	got := sink.mails()
	require.Len(t, got, 2)
	for _, r := range got {
		require.True(t, r.TLS)
		require.Equal(t, "svc", r.User)
	}
	require.Contains(t, parseMail(t, got[0].Data).Text, resetLink)
	require.Contains(t, parseMail(t, got[1].Data).Text, signInLink)
}

// Without a user name nothing authenticates; "none" sends in clear.
func TestSMTPWithoutTLSOrAuth(t *testing.T) {
	t.Parallel()
	ring := newRing(t)
	sink := startSink(t, sinkOptions{NoStartTLS: true})
	d := deliverer(t, sink.config("none"), ring)
	c, link := invitationClaim(t, ring, nil)
	require.NoError(t, d.Deliver(t.Context(), c).Err)
	got := sink.mails()
	require.Len(t, got, 1)
	require.False(t, got[0].TLS)
	require.Empty(t, got[0].User)
	require.Contains(t, parseMail(t, got[0].Data).Text, link)
}

// A permanent refusal of the recipient (550) kills the delivery at once; a
// temporary one (451) is retried.
func TestSMTPRecipientRefusals(t *testing.T) {
	t.Parallel()
	ring := newRing(t)
	sink := startSink(t, sinkOptions{Username: "svc", Password: "hunter2", Refuse: map[string]*smtp.SMTPError{
		"nobody@example.com": {Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"},
		"busy@example.com":   {Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"},
	}})
	d := deliverer(t, sink.config("starttls"), ring, mail.WithRootCAs(sink.roots))

	c, link := invitationClaim(t, ring, func(p *invitation.MailPayload) { p.To = "nobody@example.com" })
	out := d.Deliver(t.Context(), c)
	require.Error(t, out.Err)
	require.True(t, out.Permanent, out.Err.Error())
	require.Contains(t, out.Err.Error(), "550")
	require.Contains(t, out.Err.Error(), "no such user")
	require.NotContains(t, out.Err.Error(), link)
	require.NotContains(t, out.Err.Error(), "hunter2")

	c, _ = invitationClaim(t, ring, func(p *invitation.MailPayload) { p.To = "busy@example.com" })
	out = d.Deliver(t.Context(), c)
	require.Error(t, out.Err)
	require.False(t, out.Permanent, out.Err.Error())
	require.Contains(t, out.Err.Error(), "451")
	require.Empty(t, sink.mails())
}

// Failures of the connection and of the session's set-up are retried: the
// delivery itself is fine, and an operator can mend the rest.
func TestSMTPConnectionFailuresAreRetried(t *testing.T) {
	t.Parallel()
	ring := newRing(t)

	t.Run("connection dropped mid-transaction", func(t *testing.T) {
		t.Parallel()
		sink := startSink(t, sinkOptions{DropAtRcpt: true})
		d := deliverer(t, sink.config("starttls"), ring, mail.WithRootCAs(sink.roots))
		c, _ := invitationClaim(t, ring, nil)
		out := d.Deliver(t.Context(), c)
		require.Error(t, out.Err)
		require.False(t, out.Permanent, out.Err.Error())
		require.Empty(t, sink.mails())
	})
	t.Run("nothing listening", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		port := ln.Addr().(*net.TCPAddr).Port
		require.NoError(t, ln.Close())
		cfg := mailConfig("smtp")
		cfg.SMTPHost, cfg.SMTPPort = "127.0.0.1", port
		d := deliverer(t, cfg, ring)
		c, _ := invitationClaim(t, ring, nil)
		out := d.Deliver(t.Context(), c)
		require.Error(t, out.Err)
		require.False(t, out.Permanent)
		require.Contains(t, out.Err.Error(), "dial")
	})
	t.Run("STARTTLS required but not offered", func(t *testing.T) {
		t.Parallel()
		sink := startSink(t, sinkOptions{NoStartTLS: true})
		d := deliverer(t, sink.config("starttls"), ring, mail.WithRootCAs(sink.roots))
		c, _ := invitationClaim(t, ring, nil)
		out := d.Deliver(t.Context(), c)
		require.Error(t, out.Err)
		require.False(t, out.Permanent)
		require.Contains(t, out.Err.Error(), "STARTTLS")
		require.Empty(t, sink.mails(), "nothing is sent in clear")
	})
	t.Run("certificate not trusted", func(t *testing.T) {
		t.Parallel()
		sink := startSink(t, sinkOptions{})
		d := deliverer(t, sink.config("starttls"), ring) // system roots only
		c, _ := invitationClaim(t, ring, nil)
		out := d.Deliver(t.Context(), c)
		require.Error(t, out.Err)
		require.False(t, out.Permanent)
		require.Contains(t, out.Err.Error(), "certificate")
		require.Empty(t, sink.mails())
	})
	t.Run("wrong password", func(t *testing.T) {
		t.Parallel()
		sink := startSink(t, sinkOptions{Username: "svc", Password: "hunter2"})
		cfg := sink.config("starttls")
		cfg.SMTPPassword = "wrong-password"
		d := deliverer(t, cfg, ring, mail.WithRootCAs(sink.roots))
		c, _ := invitationClaim(t, ring, nil)
		out := d.Deliver(t.Context(), c)
		require.Error(t, out.Err)
		require.False(t, out.Permanent)
		require.Contains(t, out.Err.Error(), "535")
		require.NotContains(t, out.Err.Error(), "wrong-password")
		require.Empty(t, sink.mails())
	})
}

// go-mail leaves the connection open when the session's set-up (greeting,
// STARTTLS, authentication) fails; the transport closes it. The test is not
// parallel and stops the garbage collector, whose finalizer would otherwise
// close a leaked connection at a random moment.
func TestSMTPClosesTheConnectionAfterAFailedSetUp(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	ring := newRing(t)
	for name, o := range map[string]sinkOptions{
		"STARTTLS not offered": {NoStartTLS: true},
		"wrong password":       {Username: "svc", Password: "hunter2"},
	} {
		t.Run(name, func(t *testing.T) {
			sink := startSink(t, o)
			cfg := sink.config("starttls")
			if o.Username != "" {
				cfg.SMTPPassword = "wrong-password"
			}
			d := deliverer(t, cfg, ring, mail.WithRootCAs(sink.roots))
			c, _ := invitationClaim(t, ring, nil)
			require.Error(t, d.Deliver(t.Context(), c).Err)
			require.Eventually(t, func() bool { return sink.openSessions() == 0 }, 30*time.Second, 5*time.Millisecond,
				"the server still holds the deliverer's connection")
		})
	}
}

// An attempt returns as soon as its context ends, even while the server
// holds the exchange; the engine then gives the attempt back.
func TestSMTPReturnsWhenTheContextEnds(t *testing.T) {
	t.Parallel()
	ring := newRing(t)
	reached, release := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(release) })
	sink := startSink(t, sinkOptions{DataReached: reached, Release: release})
	// A long time-out: only the context can end this attempt in time.
	d := deliverer(t, sink.config("starttls"), ring, mail.WithRootCAs(sink.roots), mail.WithSMTPTimeout(10*time.Minute))

	ctx, cancel := context.WithCancel(t.Context())
	c, _ := invitationClaim(t, ring, nil)
	done := make(chan outbox.Outcome, 1)
	go func() { done <- d.Deliver(ctx, c) }()
	select {
	case <-reached:
	case <-time.After(30 * time.Second):
		t.Fatal("the server never saw DATA")
	}
	cancel()
	select {
	case out := <-done:
		require.ErrorIs(t, out.Err, context.Canceled)
		require.False(t, out.Permanent)
	case <-time.After(30 * time.Second):
		t.Fatal("Deliver did not return after its context ended")
	}
}

// Deliveries run in parallel (the outbox's parallel setting), each on its own
// connection.
func TestSMTPParallelDeliveries(t *testing.T) {
	t.Parallel()
	ring := newRing(t)
	sink := startSink(t, sinkOptions{Username: "svc", Password: "hunter2"})
	d := deliverer(t, sink.config("starttls"), ring, mail.WithRootCAs(sink.roots))

	const n = 8
	links := make(map[string]bool, n)
	claims := make([]outbox.Claimed, n)
	for i := range claims {
		var link string
		claims[i], link = invitationClaim(t, ring, nil)
		links[link] = true
	}
	errs := make(chan error, n)
	for _, c := range claims {
		go func() { errs <- d.Deliver(t.Context(), c).Err }()
	}
	for range n {
		require.NoError(t, <-errs)
	}
	got := sink.mails()
	require.Len(t, got, n)
	for _, r := range got {
		text := parseMail(t, r.Data).Text
		found := false
		for l := range links {
			if strings.Contains(text, l) {
				found = true
				delete(links, l)
				break
			}
		}
		require.True(t, found, "each mail carries its own link")
	}
}
