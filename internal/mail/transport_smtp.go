package mail

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	gomail "github.com/wneessen/go-mail"

	"github.com/svcdev/svc/internal/config"
)

// SMTP encryption modes (mail.smtp_tls).
const (
	tlsStartTLS = "starttls" // plain connection upgraded with STARTTLS, which the server must offer
	tlsImplicit = "tls"      // TLS from the first byte (usually port 465)
	tlsNone     = "none"     // no encryption
)

// smtpTransport sends each mail over a connection of its own. One go-mail
// client per mail keeps deliveries independent (go-mail's client changes its
// own state while authenticating).
type smtpTransport struct {
	host     string
	port     int
	mode     string
	username string
	password string
	tls      *tls.Config
	timeout  time.Duration
}

func newSMTPTransport(cfg config.Mail, roots *x509.CertPool, timeout time.Duration) (*smtpTransport, error) {
	if cfg.SMTPPassword != "" && cfg.SMTPUsername == "" {
		return nil, errors.New("mail.smtp_password is set but mail.smtp_username is empty")
	}
	// go-mail refuses to send a password in clear except to the local host;
	// refuse that configuration at startup rather than at every delivery.
	if cfg.SMTPUsername != "" && cfg.SMTPTLS == tlsNone && !isLocalhost(cfg.SMTPHost) {
		return nil, errors.New("mail.smtp_username: a password is never sent unencrypted to another host; set mail.smtp_tls to \"starttls\" or \"tls\"")
	}
	return &smtpTransport{
		host: cfg.SMTPHost, port: cfg.SMTPPort, mode: cfg.SMTPTLS,
		username: cfg.SMTPUsername, password: cfg.SMTPPassword,
		tls:     &tls.Config{ServerName: cfg.SMTPHost, RootCAs: roots, MinVersion: tls.VersionTLS12},
		timeout: timeout,
	}, nil
}

// isLocalhost is go-mail's test for a host a password may be sent to in clear.
func isLocalhost(host string) bool {
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}

// send delivers e. It returns when ctx ends: the connection is closed under
// the SMTP exchange. A message the server accepted is delivered even when the
// commands after it (RSET, QUIT) fail.
func (t *smtpTransport) send(ctx context.Context, e envelope) (string, error) {
	conns := &connSet{}
	stop := context.AfterFunc(ctx, conns.closeAll)
	defer func() {
		stop()
		conns.closeAll()
	}()
	client, err := gomail.NewClient(t.host, t.options(conns)...)
	if err != nil {
		return "", fmt.Errorf("smtp client: %w", err)
	}
	err = client.DialAndSendWithContext(ctx, e.Msg)
	if e.Msg.IsDelivered() {
		return e.Msg.ServerResponse(), nil
	}
	if err == nil {
		return "", errors.New("smtp: the server did not accept the message")
	}
	return "", classifySMTP(err)
}

func (t *smtpTransport) options(conns *connSet) []gomail.Option {
	opts := []gomail.Option{
		gomail.WithPort(t.port),
		gomail.WithTimeout(t.timeout),
		gomail.WithTLSConfig(t.tls.Clone()),
		gomail.WithDialContextFunc(t.dialer(conns)),
	}
	if t.mode == tlsStartTLS {
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	} else {
		// Implicit TLS is set up by the dialer; "none" has no TLS at all.
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	}
	if t.username != "" {
		// PLAIN and LOGIN are what submission servers offer over TLS; another
		// mechanism is discovered from the server's list when neither is there.
		opts = append(opts,
			gomail.WithOpportunisticSMTPAuth(gomail.SMTPAuthPlain, gomail.SMTPAuthLogin),
			gomail.WithUsername(t.username), gomail.WithPassword(t.password))
	}
	return opts
}

// dialer connects (with TLS first in implicit mode) and records the
// connection in conns, so that it is closed however the exchange ends: go-mail
// leaves it open when the greeting, STARTTLS or authentication fails.
func (t *smtpTransport) dialer(conns *connSet) gomail.DialContextFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		nd := &net.Dialer{}
		var (
			c   net.Conn
			err error
		)
		if t.mode == tlsImplicit {
			c, err = (&tls.Dialer{NetDialer: nd, Config: t.tls.Clone()}).DialContext(ctx, network, addr)
		} else {
			c, err = nd.DialContext(ctx, network, addr)
		}
		if err != nil {
			return nil, err
		}
		if !conns.add(c) {
			return nil, net.ErrClosed
		}
		return c, nil
	}
}

// classifySMTP marks a 5xx answer to the recipient or to the message
// (RCPT TO, DATA, end of data) permanent: the server refuses this mail for
// good (RFC 5321 4.2.1). A 5xx answer to MAIL FROM is about the sender, which
// is configuration, so it is retried like a 4xx answer, a failed connection,
// greeting, STARTTLS or authentication: an operator can fix those while the
// outbox retries.
func classifySMTP(err error) error {
	var se *gomail.SendError
	if errors.As(err, &se) {
		code := se.ErrorCode()
		switch se.Reason {
		case gomail.ErrSMTPRcptTo, gomail.ErrSMTPData, gomail.ErrSMTPDataClose:
			if code >= 500 && code <= 599 {
				return permanent(fmt.Errorf("smtp: %w", err))
			}
		}
	}
	return fmt.Errorf("smtp: %w", err)
}

// connSet holds the connections of one send so that they can be closed from
// another goroutine (when the send's context ends).
type connSet struct {
	mu     sync.Mutex
	conns  []net.Conn
	closed bool
}

// add records c; once the set is closed it closes c and reports false.
func (s *connSet) add(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = c.Close()
		return false
	}
	s.conns = append(s.conns, c)
	return true
}

func (s *connSet) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, c := range s.conns {
		_ = c.Close()
	}
	s.conns = nil
}
