package mail_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/mail"
	"github.com/svcdev/svc/internal/outbox"
)

func fileConfig(dir string) config.Mail {
	c := mailConfig("file")
	c.FileDir = dir
	return c
}

// Each delivery becomes one .eml file named after it, readable by the
// service's user only, in a directory created for it; the file parses back
// as the mail that was meant.
func TestFileTransportWritesOneMessagePerDelivery(t *testing.T) {
	t.Parallel()
	ring := newRing(t)
	dir := filepath.Join(t.TempDir(), "spool", "mail")
	d := deliverer(t, fileConfig(dir), ring)

	info, err := os.Stat(dir)
	require.NoError(t, err, "the directory is made when the deliverer is built")
	require.Equal(t, os.FileMode(0o700), info.Mode().Perm())

	inv, invLink := invitationClaim(t, ring, nil)
	reset, resetLink := resetClaim(t, ring)
	signIn, signInLink := signInClaim(t, ring)
	for _, c := range []outbox.Claimed{inv, reset, signIn} {
		out := d.Deliver(t.Context(), c)
		require.NoError(t, out.Err)
		require.Equal(t, "written to "+filepath.Join(dir, c.ID+".eml"), out.Response)
	}

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		info, err := e.Info()
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), e.Name())
	}
	require.ElementsMatch(t, []string{inv.ID + ".eml", reset.ID + ".eml", signIn.ID + ".eml"}, names, "no temporary file is left")

	m := readEML(t, dir, inv.ID)
	require.Equal(t, `"svc" <noreply@localhost>`, m.Header.Get("From"))
	require.Equal(t, "<ada@example.com>", m.Header.Get("To"))
	require.Equal(t, "Invitation to the workspace Research of Acme", m.subject(t))
	require.Equal(t, "<"+inv.ID+"@localhost>", m.Header.Get("Message-Id"))
	require.Equal(t, "auto-generated", m.Header.Get("Auto-Submitted"))
	require.Equal(t, "1.0", m.Header.Get("Mime-Version"))
	_, err = m.Header.Date()
	require.NoError(t, err)
	require.Contains(t, m.Text, "\r\n"+invLink+"\r\n", "the link stands on a line of its own")
	require.Contains(t, m.Text, `Grace Hopper invited you to join the workspace "Research"`)
	require.Contains(t, m.HTML, `href="`+strings.ReplaceAll(invLink, "&", "&amp;")+`"`)

	m = readEML(t, dir, reset.ID)
	require.Equal(t, "Reset your password", m.subject(t))
	require.Contains(t, m.Text, resetLink)
	require.Contains(t, m.HTML, resetLink)

	m = readEML(t, dir, signIn.ID)
	require.Equal(t, "Your sign-in link", m.subject(t))
	require.Contains(t, m.Text, signInLink)
	require.Contains(t, m.HTML, signInLink)
}

func readEML(t *testing.T, dir, deliveryID string) parsedMail {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, deliveryID+".eml"))
	require.NoError(t, err)
	require.Contains(t, string(raw), "\r\n", "RFC 5322 lines end in CRLF")
	return parseMail(t, raw)
}

// A redelivery (at least once) replaces its file, however many senders write
// it at once: there is one whole file per delivery, never a torn one.
func TestFileTransportRedeliveryReplacesTheFile(t *testing.T) {
	t.Parallel()
	ring := newRing(t)
	dir := t.TempDir()
	d := deliverer(t, fileConfig(dir), ring)
	c, link := invitationClaim(t, ring, nil)

	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			out := d.Deliver(t.Context(), c)
			require.NoError(t, out.Err)
		})
	}
	wg.Wait()

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, c.ID+".eml", entries[0].Name())
	m := readEML(t, dir, c.ID)
	require.Contains(t, m.Text, link)
}

// A directory that cannot be created fails startup; one removed later is made
// again at the next delivery.
func TestFileTransportDirectory(t *testing.T) {
	t.Parallel()
	ring := newRing(t)
	log, _ := newLogger()
	parent := t.TempDir()
	blocker := filepath.Join(parent, "file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o600))
	_, err := mail.NewDeliverer(fileConfig(filepath.Join(blocker, "mail")), ring, log)
	require.ErrorContains(t, err, "mail.file_dir")

	dir := filepath.Join(parent, "mail")
	d := deliverer(t, fileConfig(dir), ring)
	require.NoError(t, os.Remove(dir))
	c, _ := invitationClaim(t, ring, nil)
	out := d.Deliver(t.Context(), c)
	require.NoError(t, out.Err)
	require.FileExists(t, filepath.Join(dir, c.ID+".eml"))
}
