package mail_test

import (
	"testing"

	"github.com/svcdev/svc/internal/mail"
	"github.com/svcdev/svc/internal/outbox"
)

// BenchmarkDeliver measures one identity mail end to end (open the sealed
// link, render both parts, build the message, hand it over) per transport.
// The SMTP case opens a connection per mail, with STARTTLS and AUTH PLAIN, to
// the in-process server; the file case syncs each file and its directory.
func BenchmarkDeliver(b *testing.B) {
	for _, name := range []string{"log", "file", "smtp"} {
		b.Run(name, func(b *testing.B) {
			ring := newRing(b)
			var d *mail.Deliverer
			switch name {
			case "log":
				d = deliverer(b, mailConfig("log"), ring)
			case "file":
				d = deliverer(b, fileConfig(b.TempDir()), ring)
			case "smtp":
				sink := startSink(b, sinkOptions{Username: "svc", Password: "hunter2"})
				d = deliverer(b, sink.config("starttls"), ring, mail.WithRootCAs(sink.roots))
			}
			claims := make([]outbox.Claimed, b.N)
			for i := range claims {
				claims[i], _ = invitationClaim(b, ring, nil)
			}
			b.ResetTimer()
			for i := range b.N {
				if out := d.Deliver(b.Context(), claims[i]); out.Err != nil {
					b.Fatal(out.Err)
				}
			}
		})
	}
}
