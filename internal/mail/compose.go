package mail

import (
	"encoding/json"
	"errors"
	"fmt"
	netmail "net/mail"
	"net/url"
	"strings"

	"github.com/svcdev/svc/internal/invitation"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/outbox"
	"github.com/svcdev/svc/internal/session"
)

// composed is one identity mail, rendered and ready to be built into a message.
type composed struct {
	Template string
	To       *netmail.Address
	rendered
}

// compose reads a claimed identity_mail delivery: it decodes the clear payload,
// opens the sealed link and renders the mail. Every error is permanent (no
// retry can change the stored delivery) and names no secret.
func compose(ring *keyring.Ring, d outbox.Claimed) (composed, error) {
	if d.Kind != outbox.KindIdentityMail {
		return composed{}, fmt.Errorf("delivery %s is of kind %q, not %s", d.ID, d.Kind, outbox.KindIdentityMail)
	}
	var head struct {
		Template string `json:"template"`
	}
	if err := json.Unmarshal(d.Payload, &head); err != nil {
		return composed{}, fmt.Errorf("identity mail %s: the payload is not a JSON object with a template: %w", d.ID, err)
	}
	var (
		v   view
		err error
	)
	switch head.Template {
	case TemplateInvitation:
		v, err = invitationView(ring, d)
	case TemplatePasswordReset:
		v, err = resetView(ring, d)
	case TemplateSignIn:
		v, err = signInView(ring, d)
	case TemplateInvitationConfirmation, TemplateInvitationAttempt:
		v, err = confirmationView(ring, d)
	default:
		return composed{}, fmt.Errorf("identity mail %s: unknown template %.64q", d.ID, head.Template)
	}
	if err != nil {
		return composed{}, fmt.Errorf("identity mail %s (%s): %w", d.ID, head.Template, err)
	}
	to, err := recipient(v.To)
	if err != nil {
		return composed{}, fmt.Errorf("identity mail %s (%s): %w", d.ID, head.Template, err)
	}
	r, err := render(head.Template, v)
	if err != nil {
		return composed{}, fmt.Errorf("identity mail %s: %w", d.ID, err)
	}
	return composed{Template: head.Template, To: to, rendered: r}, nil
}

func invitationView(ring *keyring.Ring, d outbox.Claimed) (view, error) {
	var p invitation.MailPayload
	if err := decodePayload(d.Payload, &p); err != nil {
		return view{}, err
	}
	if p.InvitationID == "" {
		return view{}, errors.New("the payload names no invitation_id")
	}
	var s invitation.MailSecrets
	if err := openSealed(ring, d.Sealed, invitation.MailAAD(p.InvitationID), &s); err != nil {
		return view{}, err
	}
	return invitedView(view{
		To: p.To, Link: s.InvitationURL, ExpiresAt: formatExpiry(p.ExpiresAt),
		OrganizationName: p.OrganizationName, Role: p.Role, InvitedBy: p.InvitedBy,
	}, p.WorkspaceName)
}

// invitedView completes the view of a mail about an invitation with the
// workspace's name (nil for an organization invitation) and checks it.
func invitedView(v view, workspaceName *string) (view, error) {
	if workspaceName != nil {
		v.WorkspaceName = *workspaceName
		if v.WorkspaceName == "" {
			return view{}, errors.New("the payload's workspace_name is empty")
		}
	}
	return v, checkView(v, map[string]string{
		"to": v.To, "organization_name": v.OrganizationName, "workspace_name": v.WorkspaceName,
		"role": v.Role, "invited_by": v.InvitedBy,
	})
}

// confirmationView reads the two mails of an acceptance that waits for the
// address's owner; they share a payload.
func confirmationView(ring *keyring.Ring, d outbox.Claimed) (view, error) {
	var p invitation.ConfirmationMailPayload
	if err := decodePayload(d.Payload, &p); err != nil {
		return view{}, err
	}
	if p.MailID == "" {
		return view{}, errors.New("the payload names no mail_id")
	}
	var s invitation.ConfirmationMailSecrets
	if err := openSealed(ring, d.Sealed, invitation.ConfirmationMailAAD(p.MailID), &s); err != nil {
		return view{}, err
	}
	return invitedView(view{
		To: p.To, Link: s.Link, ExpiresAt: formatExpiry(p.ExpiresAt),
		OrganizationName: p.OrganizationName, Role: p.Role, InvitedBy: p.InvitedBy,
	}, p.WorkspaceName)
}

func resetView(ring *keyring.Ring, d outbox.Claimed) (view, error) {
	var p session.ResetMailPayload
	if err := decodePayload(d.Payload, &p); err != nil {
		return view{}, err
	}
	if p.MailLinkID == "" {
		return view{}, errors.New("the payload names no mail_link_id")
	}
	var s session.ResetMailSecret
	if err := openSealed(ring, d.Sealed, session.MailAAD(p.MailLinkID), &s); err != nil {
		return view{}, err
	}
	v := view{To: p.To, Link: s.ResetURL, ExpiresAt: formatExpiry(p.ExpiresAt)}
	return v, checkView(v, map[string]string{"to": v.To})
}

func signInView(ring *keyring.Ring, d outbox.Claimed) (view, error) {
	var p session.SignInMailPayload
	if err := decodePayload(d.Payload, &p); err != nil {
		return view{}, err
	}
	if p.MailLinkID == "" {
		return view{}, errors.New("the payload names no mail_link_id")
	}
	var s session.SignInMailSecret
	if err := openSealed(ring, d.Sealed, session.MailAAD(p.MailLinkID), &s); err != nil {
		return view{}, err
	}
	v := view{To: p.To, Link: s.SignInURL, ExpiresAt: formatExpiry(p.ExpiresAt)}
	return v, checkView(v, map[string]string{"to": v.To})
}

// decodePayload decodes a clear payload into p. The payload holds no secret,
// so its decoding error may be quoted.
func decodePayload(payload json.RawMessage, p any) error {
	if err := json.Unmarshal(payload, p); err != nil {
		return fmt.Errorf("decode the payload: %w", err)
	}
	return nil
}

// openSealed opens a delivery's sealed part with aad and decodes it into s.
// The key ring's errors name no secret; a decoding error could quote the
// plaintext, so it is not passed on.
func openSealed(ring *keyring.Ring, sealed, aad []byte, s any) error {
	if len(sealed) == 0 {
		return errors.New("the delivery has no sealed link")
	}
	plain, err := ring.Open(sealed, aad)
	if err != nil {
		return fmt.Errorf("open the sealed link: %w", err)
	}
	if err := json.Unmarshal(plain, s); err != nil {
		return errors.New("the sealed part is not the expected JSON object")
	}
	return nil
}

// checkView refuses a view whose link is not an absolute http(s) URL, or
// whose fields are missing or hold line breaks. A line break in a value that
// reaches a header (the recipient, the names in the subject) could add
// headers of its own; the mail is refused rather than repaired.
func checkView(v view, fields map[string]string) error {
	if err := checkLink(v.Link); err != nil {
		return err
	}
	for name, value := range fields {
		if strings.ContainsAny(value, "\r\n") {
			return fmt.Errorf("the payload's %s contains a line break", name)
		}
	}
	for _, name := range []string{"to", "organization_name", "role", "invited_by"} {
		if value, ok := fields[name]; ok && strings.TrimSpace(value) == "" {
			return fmt.Errorf("the payload's %s is empty", name)
		}
	}
	return nil
}

// checkLink accepts an absolute http or https URL. The link is a credential:
// the error never quotes it.
func checkLink(link string) error {
	if link == "" {
		return errors.New("the sealed link is empty")
	}
	u, err := url.Parse(link)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return errors.New("the sealed link is not an absolute http(s) URL")
	}
	return nil
}

// recipient parses the payload's address. It must be a bare address (no
// display name, no group), which is what the producers write.
func recipient(to string) (*netmail.Address, error) {
	a, err := netmail.ParseAddress(to)
	if err != nil || a.Address != to {
		return nil, errors.New("the payload's to is not a single mail address")
	}
	return a, nil
}
