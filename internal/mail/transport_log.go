package mail

import (
	"context"
	"log/slog"
)

// logTransport writes one line per mail to the process log. It is the
// default, so a fresh installation works without a mail server, but it never
// logs the message body: the link in it is a credential, and logs are read,
// shipped and kept by more people and systems than a mailbox. An operator who
// needs the full messages on one machine sets mail.transport = "file".
type logTransport struct {
	log *slog.Logger
}

func (t logTransport) send(ctx context.Context, e envelope) (string, error) {
	t.log.InfoContext(ctx, "identity mail not sent: mail.transport is \"log\"; the link is withheld (set mail.transport to \"file\" or \"smtp\" to deliver it)",
		"delivery_id", e.DeliveryID, "template", e.Template, "to", e.To, "subject", e.Subject)
	return "logged without its link", nil
}
