package invitation_test

import (
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/invitation"
)

// sentMail is an identity_mail delivery of an acceptance that waits for the
// address's owner, opened as the mail sender would.
type sentMail struct {
	Payload invitation.ConfirmationMailPayload
	Link    string
}

// mailsTo returns the queued confirmation and attempt mails to email, oldest
// first, remembering their links' tokens for the log check.
func (b *testBundle) mailsTo(t *testing.T, email string) []sentMail {
	t.Helper()
	rows, err := b.h.App.Pool.Query(t.Context(), `SELECT payload, sealed FROM outbox
		WHERE kind = 'identity_mail' AND payload->>'template' IN ('invitation_confirmation', 'invitation_attempt')
		  AND payload->>'to' = $1 ORDER BY id`, email)
	require.NoError(t, err)
	defer rows.Close()
	var out []sentMail
	for rows.Next() {
		var payload, sealed []byte
		require.NoError(t, rows.Scan(&payload, &sealed))
		var m sentMail
		require.NoError(t, json.Unmarshal(payload, &m.Payload))
		plain, err := b.h.App.Keyring.Open(sealed, invitation.ConfirmationMailAAD(m.Payload.MailID))
		require.NoError(t, err)
		var s invitation.ConfirmationMailSecrets
		require.NoError(t, json.Unmarshal(plain, &s))
		m.Link = s.Link
		b.keepToken(t, s.Link)
		out = append(out, m)
	}
	require.NoError(t, rows.Err())
	return out
}

var hiddenInput = regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`)

// followLink opens a mailed confirmation link in a browser of its own and
// presses its button, returning the answer's status and Location.
func (b *testBundle) followLink(t *testing.T, link string) (int, string) {
	t.Helper()
	u, err := url.Parse(link)
	require.NoError(t, err)
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	page, err := c.Get(b.h.URL + u.Path + "?" + u.RawQuery)
	require.NoError(t, err)
	body, err := io.ReadAll(page.Body)
	require.NoError(t, err)
	page.Body.Close()
	if page.StatusCode != http.StatusOK {
		return page.StatusCode, ""
	}
	form := url.Values{}
	for _, m := range hiddenInput.FindAllStringSubmatch(string(body), -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	req, err := http.NewRequest(http.MethodPost, b.h.URL+"/invitations/confirm", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.h.URL)
	resp, err := c.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

// requireConfirmationSent requires the 202 answer of an acceptance that waits
// for the address's owner.
func requireConfirmationSent(t *testing.T, status int, body []byte) {
	t.Helper()
	require.Equal(t, http.StatusAccepted, status, string(body))
	require.JSONEq(t, `{"status":"confirmation_sent"}`, string(body))
}
