package invitation_test

import (
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/svcdev/svc/internal/testfactory"
)

// mailsTo returns the queued confirmation and attempt mails to email, oldest
// first, remembering their links' tokens for the log check.
func (b *testBundle) mailsTo(t *testing.T, email string) []testfactory.ConfirmationMail {
	t.Helper()
	mails := testfactory.ConfirmationMails(t, b.h.App.Pool, b.h.App.Keyring, email)
	for _, m := range mails {
		b.keepToken(t, m.Link)
	}
	return mails
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
