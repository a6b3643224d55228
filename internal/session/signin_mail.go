package session

import "time"

// A sign-in link mails a one-time link that signs its holder in without a
// password (mail_link purpose "sign_in"). The flow that issues and redeems it
// is not built yet; its mail is defined here, next to the password reset's, so
// that the identity_mail deliverer already renders it. Its delivery is sealed
// like a reset's: the link under MailAAD(MailLinkID).
const (
	PurposeSignIn = "sign_in"
	// TemplateSignIn names the identity_mail template of a sign-in link.
	TemplateSignIn = "sign_in"
)

// SignInMailPayload is the clear payload of a sign-in link identity_mail
// delivery. The link itself is sealed (SignInMailSecret) with additional data
// MailAAD(MailLinkID).
type SignInMailPayload struct {
	Template   string    `json:"template"` // TemplateSignIn
	To         string    `json:"to"`
	UserID     string    `json:"user_id"`
	MailLinkID string    `json:"mail_link_id"`
	ExpiresAt  time.Time `json:"expires_at"`
}

// SignInMailSecret is the sealed part of a sign-in link delivery.
type SignInMailSecret struct {
	SignInURL string `json:"sign_in_url"`
}
