package console_test

import (
	"encoding/json"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// An invited person accepts in the browser, confirms from the mail, signs
// in, makes an API key in the console and uses it with curl.
func TestBrowserInvitedMemberMakesAnAPIKeyAndUsesItWithCurl(t *testing.T) {
	t.Parallel()
	curl, err := exec.LookPath("curl")
	require.NoError(t, err, "curl is needed: the journey ends with it")
	b := setup(t)
	c := b.newChrome(t)
	const email, pw = "invited.runner@example.com", "a runner's password"
	b.secret(pw)

	c.open(b.invite(t, email, "runner", false))
	c.screenshot("invitation")
	c.fill(`input[name=display_name]`, "Invited Runner")
	c.fill(`input[name=password]`, pw)
	c.fill(`input[name=password_confirmation]`, pw)
	c.click(`form.stack button[type=submit]`)
	c.elText("p", "We have sent a mail")
	mails := b.confirmationMails(t, email)
	require.Len(t, mails, 1)
	link, _ := b.linkPath(t, mails[0].Link)
	c.open(link)
	c.click(`form.stack button[type=submit]`)
	c.elText("p", "The invitation is accepted")

	c.signIn(email, pw)
	require.Contains(t, c.text("h1"), "Signed in as "+email)
	c.click(`td a[href$="/runs"]`)
	c.el(`nav.sidenav`)
	c.clickText(`nav.sidenav a`, "^API keys$")
	c.elText("h2", "New key")
	c.screenshot("api-keys")

	c.fill(`input[name=name]`, "my laptop")
	c.click(`form.stack button[type=submit]`)
	c.el(`#new-token`)
	token := strings.TrimSpace(c.text("#new-token"))
	require.Regexp(t, regexp.MustCompile(`^svc_[A-Za-z0-9]{40,}$`), token)
	b.secret(token)

	out, err := exec.CommandContext(t.Context(), curl, "-sS", "--fail", "-H", "Authorization: Bearer "+token, b.h.URL+"/api/v1/me").Output()
	require.NoError(t, err, "curl with the console's token")
	var me struct {
		Role string `json:"role"`
		User struct {
			Email string `json:"email"`
		} `json:"user"`
	}
	require.NoError(t, json.Unmarshal(out, &me))
	require.Equal(t, "runner", me.Role)
	require.Equal(t, email, me.User.Email)
}
