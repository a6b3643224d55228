// Package mail delivers identity mail: the invitation, password reset and
// sign-in link messages that the invitation and session packages write to the
// outbox (kind identity_mail). Deliverer is the outbox's Deliverer for that
// kind; see docs/decisions/0023-identity-mail.md.
//
// A delivery's clear payload names its template ("invitation",
// "password_reset", "sign_in") and what the mail says; the link, which carries
// a credential, is sealed with the key ring under additional data that binds
// it to the invitation or mail link. The deliverer decodes the payload, opens
// the link, renders the text and HTML templates embedded in this package into
// one multipart/alternative RFC 5322 message, and hands it to the configured
// transport:
//
//   - log (the default) writes a line per mail to the process log: recipient,
//     subject and template, never the link. A process log is not a place for
//     credentials (an invitation link is as good as the invitation).
//   - file writes one .eml file per delivery into mail.file_dir, atomically,
//     named after the delivery id so that a redelivery replaces its file.
//   - smtp sends through an SMTP server with STARTTLS (required when
//     configured) or implicit TLS, authenticating when a user name is set.
//
// A delivery that can never succeed (an unknown template, a payload or sealed
// link that cannot be read, a line break in an address or a name, a recipient
// the SMTP server refuses with a 5xx answer) is permanent: the outbox marks it
// dead at once. Anything else (the server unreachable, a 4xx answer, a broken
// connection) is retried with the outbox's backoff. Errors name the delivery's
// fields, never the link.
//
// The message's Message-ID is derived from the delivery id, so a redelivered
// mail carries the same Message-ID and receivers can tell it is a duplicate.
package mail
