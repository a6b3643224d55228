package invitation_test

import (
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/http"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/client"
	"github.com/svcdev/svc/internal/apitest"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/testfactory"
)

// The running process delivers an invitation's mail through the outbox: the
// commit wakes the senders, the file transport writes the mail, and the
// delivery is settled with its attempt.
func TestTheInvitationMailIsDeliveredByTheOutbox(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := apitest.Start(t, apitest.Options{Configure: func(c *config.Config) {
		c.Server.PublicURL = publicURL
		c.Mail.Transport = "file"
		c.Mail.FileDir = dir
	}})
	admin := testfactory.Bootstrap(t, h.App.Pool)
	resp, err := h.Client(t, admin.APIKey).CreateWorkspaceInvitationWithResponse(t.Context(), admin.WorkspaceID, nil,
		client.CreateInvitationRequest{Email: "grace@example.com", Role: "viewer"})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, resp.StatusCode(), string(resp.Body))

	var deliveryID, status string
	require.Eventually(t, func() bool {
		err := h.App.Pool.QueryRow(t.Context(), `SELECT id, status FROM outbox WHERE payload->>'invitation_id' = $1`,
			resp.JSON201.Invitation.Id).Scan(&deliveryID, &status)
		require.NoError(t, err)
		return status == "delivered"
	}, 30*time.Second, 20*time.Millisecond, "the mail was not delivered")
	var result string
	require.NoError(t, h.App.Pool.QueryRow(t.Context(), `SELECT result FROM outbox_attempt WHERE delivery_id = $1 AND number = 1`, deliveryID).Scan(&result))
	require.Equal(t, "delivered", result)

	f, err := os.Open(filepath.Join(dir, deliveryID+".eml"))
	require.NoError(t, err)
	defer f.Close()
	msg, err := mail.ReadMessage(f)
	require.NoError(t, err)
	require.Equal(t, "grace@example.com", strings.Trim(msg.Header.Get("To"), "<>"))
	_, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	require.NoError(t, err)
	parts := multipart.NewReader(msg.Body, params["boundary"])
	part, err := parts.NextPart() // the plain text part
	require.NoError(t, err)
	var body io.Reader = part
	if part.Header.Get("Content-Transfer-Encoding") == "quoted-printable" {
		body = quotedprintable.NewReader(part)
	}
	text, err := io.ReadAll(body)
	require.NoError(t, err)
	require.Contains(t, string(text), resp.JSON201.InvitationUrl)
}
