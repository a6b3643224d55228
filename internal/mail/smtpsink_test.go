package mail_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log"
	"math/big"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/config"
)

// smtpSink is an SMTP server in the test process (github.com/emersion/go-smtp)
// that keeps what it receives. It speaks the real protocol: EHLO, STARTTLS
// with a certificate of its own, AUTH PLAIN (offered only over TLS), MAIL,
// RCPT, DATA.
type smtpSink struct {
	host  string
	port  int
	roots *x509.CertPool // trusts the sink's certificate
	opts  sinkOptions

	mu       sync.Mutex
	received []receivedMail
	open     int // sessions not yet logged out
}

// sinkOptions choose how the sink behaves.
type sinkOptions struct {
	// ImplicitTLS serves TLS from the first byte; otherwise the sink offers
	// STARTTLS unless NoStartTLS.
	ImplicitTLS bool
	NoStartTLS  bool
	// Username and Password, when set, are required before MAIL.
	Username, Password string
	// Refuse answers RCPT TO of these recipients with the error.
	Refuse map[string]*smtp.SMTPError
	// DropAtRcpt closes the connection when RCPT TO arrives.
	DropAtRcpt bool
	// DataReached, when set, is closed as DATA begins; Data then waits for
	// Release (or the server's close) before reading the message.
	DataReached chan struct{}
	Release     chan struct{}
}

// receivedMail is one message the sink accepted.
type receivedMail struct {
	From string
	To   []string
	Data []byte
	User string // the authenticated user, "" for none
	TLS  bool   // the session was encrypted
}

func startSink(t testing.TB, o sinkOptions) *smtpSink {
	t.Helper()
	cert, roots := selfSignedCert(t)
	sink := &smtpSink{host: "127.0.0.1", roots: roots, opts: o}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		sink.mu.Lock()
		sink.open++
		sink.mu.Unlock()
		return &sinkSession{sink: sink, conn: c}, nil
	}))
	srv.Domain = "localhost"
	// Connections the client drops on purpose would be reported on stderr.
	srv.ErrorLog = log.New(io.Discard, "", 0)
	srv.ReadTimeout = 30 * time.Second
	srv.WriteTimeout = 30 * time.Second
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if !o.NoStartTLS && !o.ImplicitTLS {
		srv.TLSConfig = tlsConfig
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	if o.ImplicitTLS {
		ln = tls.NewListener(ln, tlsConfig)
	}
	sink.port = ln.Addr().(*net.TCPAddr).Port
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return sink
}

// config is a [mail] section that sends to the sink.
func (s *smtpSink) config(mode string) config.Mail {
	c := mailConfig("smtp")
	c.SMTPHost, c.SMTPPort, c.SMTPTLS = s.host, s.port, mode
	c.SMTPUsername, c.SMTPPassword = s.opts.Username, s.opts.Password
	return c
}

// mails returns what the sink accepted so far.
func (s *smtpSink) mails() []receivedMail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]receivedMail(nil), s.received...)
}

// openSessions counts the connections the server still holds.
func (s *smtpSink) openSessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open
}

type sinkSession struct {
	sink *smtpSink
	conn *smtp.Conn
	user string
	from string
	to   []string
}

var _ smtp.AuthSession = (*sinkSession)(nil)

func (s *sinkSession) AuthMechanisms() []string {
	if s.sink.opts.Username == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (s *sinkSession) Auth(mech string) (sasl.Server, error) {
	if mech != sasl.Plain || s.sink.opts.Username == "" {
		return nil, smtp.ErrAuthUnknownMechanism
	}
	return sasl.NewPlainServer(func(_, username, password string) error {
		if username != s.sink.opts.Username || password != s.sink.opts.Password {
			return smtp.ErrAuthFailed
		}
		s.user = username
		return nil
	}), nil
}

func (s *sinkSession) Mail(from string, _ *smtp.MailOptions) error {
	if s.sink.opts.Username != "" && s.user == "" {
		return smtp.ErrAuthRequired
	}
	s.from = from
	return nil
}

func (s *sinkSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	if s.sink.opts.DropAtRcpt {
		_ = s.conn.Conn().Close()
		return errors.New("connection dropped")
	}
	if e := s.sink.opts.Refuse[to]; e != nil {
		return e
	}
	s.to = append(s.to, to)
	return nil
}

func (s *sinkSession) Data(r io.Reader) error {
	if s.sink.opts.DataReached != nil {
		close(s.sink.opts.DataReached)
		<-s.sink.opts.Release
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	_, isTLS := s.conn.TLSConnectionState()
	s.sink.mu.Lock()
	defer s.sink.mu.Unlock()
	s.sink.received = append(s.sink.received, receivedMail{From: s.from, To: s.to, Data: data, User: s.user, TLS: isTLS})
	return nil
}

func (s *sinkSession) Reset() {
	s.from = ""
	s.to = nil
}

// Logout runs when the connection ends, whichever side closed it.
func (s *sinkSession) Logout() error {
	s.sink.mu.Lock()
	defer s.sink.mu.Unlock()
	s.sink.open--
	return nil
}

// selfSignedCert makes a certificate for 127.0.0.1 and localhost that signs
// itself, and a pool that trusts it.
func selfSignedCert(t testing.TB) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "svc test SMTP server"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, roots
}
