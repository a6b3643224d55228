package mail

import (
	"html"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/invitation"
	"github.com/svcdev/svc/internal/session"
)

// The template names are the ones the producers write.
func TestTemplateNamesMatchProducers(t *testing.T) {
	t.Parallel()
	require.Equal(t, invitation.MailTemplate, TemplateInvitation)
	require.Equal(t, session.TemplatePasswordReset, TemplatePasswordReset)
	require.Equal(t, session.TemplateSignIn, TemplateSignIn)
	require.Equal(t, invitation.ConfirmationMailTemplate, TemplateInvitationConfirmation)
	require.Equal(t, invitation.AttemptMailTemplate, TemplateInvitationAttempt)
}

// Every template has its three parts, and each renders with the link, the
// expiry and the recipient where they belong.
func TestRenderEveryTemplate(t *testing.T) {
	t.Parallel()
	const link = "https://svc.example.com/some/page?token=AbC-dEf_123"
	expires := formatExpiry(time.Date(2030, 3, 4, 5, 6, 7, 0, time.FixedZone("CET", 3600)))
	require.Equal(t, "4 March 2030 at 04:06 UTC", expires)
	base := view{To: "ada@example.com", Link: link, ExpiresAt: expires,
		OrganizationName: "Acme", WorkspaceName: "Research", Role: "editor", InvitedBy: "Grace Hopper"}

	cases := []struct {
		name    string
		subject string
		text    []string // fragments of the text part
		label   string   // the HTML button's label
	}{
		{TemplateInvitation, "Invitation to the workspace Research of Acme",
			[]string{`Grace Hopper invited you to join the workspace "Research" of the organization "Acme" as editor.`}, "Accept the invitation"},
		{TemplatePasswordReset, "Reset your password",
			[]string{"reset the password of the account ada@example.com"}, "Choose a new password"},
		{TemplateSignIn, "Your sign-in link", []string{"To sign in as ada@example.com, open this link:"}, "Sign in"},
		{TemplateInvitationConfirmation, "Confirm your invitation to the workspace Research of Acme",
			[]string{`invitation from Grace Hopper to join the workspace "Research" of the organization "Acme" as editor for ada@example.com`, "no account is created"},
			"Confirm and create the account"},
		{TemplateInvitationAttempt, "An attempt to accept an invitation for your account",
			[]string{"for your account ada@example.com, with a password that is not your account's", "Your account was not changed"},
			"Open the invitation"},
	}
	require.Len(t, cases, len(templates), "a case per template")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := render(tc.name, base)
			require.NoError(t, err)
			require.Equal(t, tc.subject, r.Subject)

			require.Contains(t, r.Text, "\n"+link+"\n", "the link stands on a line of its own")
			require.Contains(t, r.Text, "until "+expires)
			for _, f := range tc.text {
				require.Contains(t, r.Text, f)
			}
			require.NotContains(t, r.Text, "<", "the text part has no markup")

			require.True(t, strings.HasPrefix(r.HTML, "<!DOCTYPE html>"), r.HTML)
			require.Contains(t, r.HTML, "<title>"+tc.subject+"</title>")
			require.Contains(t, r.HTML, `href="`+html.EscapeString(link)+`"`)
			require.Contains(t, r.HTML, ">"+tc.label+"</a>")
			require.Contains(t, r.HTML, "until "+expires)
			require.True(t, strings.HasSuffix(strings.TrimSpace(r.HTML), "</html>"))
		})
	}
}

func TestRenderOrganizationInvitation(t *testing.T) {
	t.Parallel()
	r, err := render(TemplateInvitation, view{To: "ada@example.com", Link: "https://svc.example.com/i?token=x",
		ExpiresAt: "soon", OrganizationName: "Acme", Role: "owner", InvitedBy: "Grace"})
	require.NoError(t, err)
	require.Equal(t, "Invitation to the organization Acme", r.Subject)
	require.Contains(t, r.Text, `Grace invited you to join the organization "Acme" as owner.`)
	require.NotContains(t, r.Text, "workspace")
	require.Contains(t, r.HTML, "the organization <strong>Acme</strong> as owner")
	require.NotContains(t, r.HTML, "workspace")
}

// Names come from users: the HTML part escapes them, and a link that is not
// a web address cannot become a script.
func TestRenderEscapesUserSuppliedNamesInHTML(t *testing.T) {
	t.Parallel()
	evil := `<script>alert("x")</script> & <b>Bob</b>`
	v := view{To: "ada@example.com", Link: `https://svc.example.com/i?token=a&x="><script>`, ExpiresAt: "soon",
		OrganizationName: evil, WorkspaceName: evil, Role: "editor", InvitedBy: evil}
	r, err := render(TemplateInvitation, v)
	require.NoError(t, err)
	require.NotContains(t, r.HTML, "<script>")
	require.NotContains(t, r.HTML, "<b>Bob")
	require.Contains(t, r.HTML, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &lt;b&gt;Bob&lt;/b&gt;")
	require.NotContains(t, r.HTML, `"><script>`, "the link is escaped in its attribute too")
	// The text part is not markup: it keeps the names as they were typed.
	require.Contains(t, r.Text, evil+" invited you")
	require.Contains(t, r.Subject, evil)

	v.Link = "javascript:alert(1)"
	r, err = render(TemplateInvitation, v)
	require.NoError(t, err)
	require.NotContains(t, r.HTML, `href="javascript:`)
}

func TestRenderUnknownTemplateFails(t *testing.T) {
	t.Parallel()
	_, err := render("newsletter", view{})
	require.Error(t, err)
}
