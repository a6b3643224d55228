package mail_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	netmail "net/mail"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/invitation"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/mail"
	"github.com/svcdev/svc/internal/outbox"
	"github.com/svcdev/svc/internal/session"
)

// newRing generates a key ring for one test.
func newRing(t testing.TB) *keyring.Ring {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keyring.json")
	require.NoError(t, keyring.Generate(path))
	ring, err := keyring.Load(path)
	require.NoError(t, err)
	return ring
}

// mailConfig is the default [mail] section with transport set.
func mailConfig(transport string) config.Mail {
	c := config.Default().Mail
	c.Transport = transport
	return c
}

// newLink makes a link with a fresh token, as the producers do.
func newLink(path string) (link, token string) {
	token = strings.ReplaceAll(id.New("tok"), "_", "-") + "-SeCrEt"
	return "https://svc.example.com" + path + "?token=" + token, token
}

// seal seals a delivery's secret as the producers do.
func seal(t testing.TB, ring *keyring.Ring, secret any, aad []byte) []byte {
	t.Helper()
	plain, err := json.Marshal(secret)
	require.NoError(t, err)
	sealed, err := ring.Seal(plain, aad)
	require.NoError(t, err)
	return sealed
}

// claim is a claimed identity_mail delivery of payload and sealed.
func claim(t testing.TB, payload any, sealed []byte) outbox.Claimed {
	t.Helper()
	raw, err := json.Marshal(payload)
	require.NoError(t, err)
	now := time.Now().UTC()
	return outbox.Claimed{ID: id.New(id.Delivery), Kind: outbox.KindIdentityMail, Payload: raw, Sealed: sealed,
		Attempt: 1, CreatedAt: now, ClaimedAt: now}
}

// invitationClaim is a workspace invitation's mail, as invitation.Service
// writes it, and its link.
func invitationClaim(t testing.TB, ring *keyring.Ring, edit func(*invitation.MailPayload)) (outbox.Claimed, string) {
	t.Helper()
	ws := "Research"
	p := invitation.MailPayload{
		Template: invitation.MailTemplate, To: "ada@example.com", InvitationID: id.New(id.Invitation),
		OrganizationName: "Acme", WorkspaceName: &ws, Role: "editor", InvitedBy: "Grace Hopper",
		ExpiresAt: time.Now().Add(time.Hour).UTC(),
	}
	if edit != nil {
		edit(&p)
	}
	link, _ := newLink("/invitations/accept")
	return claim(t, p, seal(t, ring, invitation.MailSecrets{InvitationURL: link}, invitation.MailAAD(p.InvitationID))), link
}

// resetClaim is a password reset mail, as session.Service writes it.
func resetClaim(t testing.TB, ring *keyring.Ring) (outbox.Claimed, string) {
	t.Helper()
	p := session.ResetMailPayload{Template: session.TemplatePasswordReset, To: "ada@example.com",
		UserID: id.New(id.User), MailLinkID: id.New(id.MailLink), ExpiresAt: time.Now().Add(time.Hour).UTC()}
	link, _ := newLink("/password/reset")
	return claim(t, p, seal(t, ring, session.ResetMailSecret{ResetURL: link}, session.MailAAD(p.MailLinkID))), link
}

// signInClaim is a sign-in link mail, sealed like a reset.
func signInClaim(t testing.TB, ring *keyring.Ring) (outbox.Claimed, string) {
	t.Helper()
	p := session.SignInMailPayload{Template: session.TemplateSignIn, To: "ada@example.com",
		UserID: id.New(id.User), MailLinkID: id.New(id.MailLink), ExpiresAt: time.Now().Add(time.Hour).UTC()}
	link, _ := newLink("/sign-in/link")
	return claim(t, p, seal(t, ring, session.SignInMailSecret{SignInURL: link}, session.MailAAD(p.MailLinkID))), link
}

// parsedMail is a received message, parsed back with net/mail and its MIME
// parts decoded.
type parsedMail struct {
	Header netmail.Header
	Text   string
	HTML   string
}

// parseMail parses an RFC 5322 multipart/alternative message.
func parseMail(t *testing.T, raw []byte) parsedMail {
	t.Helper()
	msg, err := netmail.ReadMessage(bytes.NewReader(raw))
	require.NoError(t, err)
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	require.NoError(t, err)
	require.Equal(t, "multipart/alternative", mt)
	out := parsedMail{Header: msg.Header}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	var types []string
	for {
		part, err := mr.NextRawPart()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		var body io.Reader = part
		if part.Header.Get("Content-Transfer-Encoding") == "quoted-printable" {
			body = quotedprintable.NewReader(part)
		}
		content, err := io.ReadAll(body)
		require.NoError(t, err)
		ct, cp, err := mime.ParseMediaType(part.Header.Get("Content-Type"))
		require.NoError(t, err)
		require.Equal(t, "UTF-8", strings.ToUpper(cp["charset"]))
		types = append(types, ct)
		switch ct {
		case "text/plain":
			out.Text = string(content)
		case "text/html":
			out.HTML = string(content)
		}
	}
	require.Equal(t, []string{"text/plain", "text/html"}, types, "the text part first, then the HTML part")
	return out
}

// subject decodes the Subject header.
func (m parsedMail) subject(t *testing.T) string {
	t.Helper()
	s, err := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
	require.NoError(t, err)
	return s
}

// syncBuffer is a log sink that tests read while the deliverer writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newLogger logs JSON at debug level into a buffer.
func newLogger() (*slog.Logger, *syncBuffer) {
	buf := &syncBuffer{}
	return slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})), buf
}

// deliverer builds a deliverer, failing the test on error.
func deliverer(t testing.TB, cfg config.Mail, ring *keyring.Ring, opts ...mail.Option) *mail.Deliverer {
	t.Helper()
	log, _ := newLogger()
	d, err := mail.NewDeliverer(cfg, ring, log, opts...)
	require.NoError(t, err)
	return d
}
