package mail

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	netmail "net/mail"
	"strings"
	"time"

	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/outbox"
)

// DefaultSMTPTimeout bounds connecting to the SMTP server and, separately,
// each phase of the exchange (greeting to authentication, then sending).
const DefaultSMTPTimeout = 30 * time.Second

// Deliverer delivers identity_mail deliveries through the configured
// transport. It is safe for concurrent use.
type Deliverer struct {
	ring      *keyring.Ring
	from      *netmail.Address
	transport transport
}

var _ outbox.Deliverer = (*Deliverer)(nil)

// transport sends a built message. It returns a short report of what became of
// it (the SMTP server's answer, the file written), kept on the attempt.
type transport interface {
	send(ctx context.Context, e envelope) (string, error)
}

// Option adjusts a Deliverer.
type Option func(*options)

type options struct {
	roots   *x509.CertPool
	timeout time.Duration
}

// WithRootCAs makes the SMTP transport trust these certificate authorities
// instead of the system's (tests use it for a self-signed server). Operators
// add a private authority to the system's trust store, or point SSL_CERT_FILE
// at a bundle.
func WithRootCAs(roots *x509.CertPool) Option {
	return func(o *options) { o.roots = roots }
}

// WithSMTPTimeout replaces DefaultSMTPTimeout.
func WithSMTPTimeout(d time.Duration) Option {
	return func(o *options) { o.timeout = d }
}

// NewDeliverer returns the identity_mail deliverer for cfg (the [mail]
// section, already validated). ring opens the deliveries' sealed links; log
// receives the mails of the log transport. The file transport's directory is
// created here, so that an unusable one fails startup.
func NewDeliverer(cfg config.Mail, ring *keyring.Ring, log *slog.Logger, opts ...Option) (*Deliverer, error) {
	if ring == nil {
		return nil, errors.New("mail: no key ring")
	}
	if log == nil {
		return nil, errors.New("mail: no logger")
	}
	o := options{timeout: DefaultSMTPTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	if o.timeout <= 0 {
		return nil, errors.New("mail: the SMTP time-out must be positive")
	}
	from, err := netmail.ParseAddress(cfg.From)
	if err != nil || strings.ContainsAny(cfg.From, "\r\n") {
		return nil, fmt.Errorf("mail.from: %q is not a mail address", cfg.From)
	}
	d := &Deliverer{ring: ring, from: from}
	switch cfg.Transport {
	case "log":
		d.transport = logTransport{log: log}
	case "file":
		if d.transport, err = newFileTransport(cfg.FileDir); err != nil {
			return nil, err
		}
	case "smtp":
		if d.transport, err = newSMTPTransport(cfg, o.roots, o.timeout); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("mail.transport: unknown transport %q", cfg.Transport)
	}
	return d, nil
}

// Deliver makes one attempt at an identity mail: it composes the message from
// the delivery and sends it. A delivery that can never be sent is Permanent;
// a failure to send is Failed, to be retried.
func (d *Deliverer) Deliver(ctx context.Context, c outbox.Claimed) outbox.Outcome {
	m, err := compose(d.ring, c)
	if err != nil {
		return outbox.Permanent(err)
	}
	e, err := buildMessage(d.from, c.ID, m)
	if err != nil {
		return outbox.Permanent(err)
	}
	report, err := d.transport.send(ctx, e)
	if err != nil {
		if ctx.Err() != nil {
			return outbox.Failed(fmt.Errorf("identity mail %s: %w", c.ID, context.Cause(ctx)))
		}
		err = fmt.Errorf("identity mail %s: %w", c.ID, err)
		if isPermanent(err) {
			return outbox.Permanent(err)
		}
		return outbox.Failed(err)
	}
	out := outbox.Delivered()
	out.Response = report
	return out
}

// permanentError marks a transport failure no retry can mend.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

func permanent(err error) error { return &permanentError{err: err} }

func isPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}
