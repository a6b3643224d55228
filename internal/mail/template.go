package mail

import (
	"embed"
	"fmt"
	htmltemplate "html/template"
	"strings"
	texttemplate "text/template"
	"time"
)

// Template names, as the identity_mail payloads' "template" field gives them.
// They equal invitation.MailTemplate, session.TemplatePasswordReset and
// session.TemplateSignIn (checked by a test).
const (
	TemplateInvitation    = "invitation"
	TemplatePasswordReset = "password_reset"
	TemplateSignIn        = "sign_in"
	// TemplateInvitationConfirmation and TemplateInvitationAttempt equal
	// invitation.ConfirmationMailTemplate and invitation.AttemptMailTemplate.
	TemplateInvitationConfirmation = "invitation_confirmation"
	TemplateInvitationAttempt      = "invitation_attempt"
)

// templates lists every template; each has a "<name>.subject" and a
// "<name>.text" text template and a "<name>.html" HTML template.
var templates = []string{TemplateInvitation, TemplatePasswordReset, TemplateSignIn, TemplateInvitationConfirmation, TemplateInvitationAttempt}

//go:embed templates/*.txt templates/*.html
var templateFS embed.FS

var (
	textTemplates = texttemplate.Must(texttemplate.New("").Option("missingkey=error").
			ParseFS(templateFS, "templates/*.txt"))
	htmlTemplates = htmltemplate.Must(htmltemplate.New("").Option("missingkey=error").
			Funcs(htmltemplate.FuncMap{"button": newButton}).
			ParseFS(templateFS, "templates/*.html"))
)

// view is what the templates see. The HTML template escapes every field; the
// text template writes them as they are (the text part is not markup).
type view struct {
	// Subject is the rendered subject line (the HTML title).
	Subject string
	// To is the recipient's address.
	To string
	// Link is the URL the mail is about; it carries a credential.
	Link string
	// ExpiresAt is when the link stops working, formatted for people.
	ExpiresAt string

	// Invitations only. WorkspaceName is empty for an organization invitation.
	OrganizationName string
	WorkspaceName    string
	Role             string
	InvitedBy        string
}

// button is the argument of the HTML "button" template: a link and its label.
type button struct {
	Link  string
	Label string
}

func newButton(link, label string) button { return button{Link: link, Label: label} }

// rendered is a mail's subject and its two bodies.
type rendered struct {
	Subject string
	Text    string
	HTML    string
}

// render executes template name's subject, text and HTML parts with v.
func render(name string, v view) (rendered, error) {
	var subject, text, html strings.Builder
	if err := textTemplates.ExecuteTemplate(&subject, name+".subject", v); err != nil {
		return rendered{}, fmt.Errorf("render the subject of %s mail: %w", name, err)
	}
	// A subject is one line: runs of white space (a template's line breaks
	// included) become one space.
	v.Subject = strings.Join(strings.Fields(subject.String()), " ")
	if err := textTemplates.ExecuteTemplate(&text, name+".text", v); err != nil {
		return rendered{}, fmt.Errorf("render the text of %s mail: %w", name, err)
	}
	if err := htmlTemplates.ExecuteTemplate(&html, name+".html", v); err != nil {
		return rendered{}, fmt.Errorf("render the HTML of %s mail: %w", name, err)
	}
	return rendered{Subject: v.Subject, Text: text.String(), HTML: html.String()}, nil
}

// formatExpiry writes an expiry for people, in UTC.
func formatExpiry(t time.Time) string {
	return t.UTC().Format("2 January 2006 at 15:04 UTC")
}
