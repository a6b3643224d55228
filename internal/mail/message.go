package mail

import (
	"fmt"
	netmail "net/mail"
	"regexp"
	"strings"

	gomail "github.com/wneessen/go-mail"
)

// deliveryIDPattern is the form of an outbox delivery id (id.Delivery). The
// file transport names files after it, so nothing else may get through.
var deliveryIDPattern = regexp.MustCompile(`^dlv_[0-9a-z]{26}$`)

// envelope is a message built for one delivery, with what the transports
// report about it.
type envelope struct {
	DeliveryID string
	Template   string
	To         string
	Subject    string
	Msg        *gomail.Msg
}

// buildMessage makes the RFC 5322 message of a composed mail: From, To,
// Subject, Date, a Message-ID derived from the delivery id (a redelivery
// repeats it), Auto-Submitted (RFC 3834, so auto-responders stay quiet) and a
// multipart/alternative body with the text part first.
func buildMessage(from *netmail.Address, deliveryID string, c composed) (envelope, error) {
	if !deliveryIDPattern.MatchString(deliveryID) {
		return envelope{}, fmt.Errorf("identity mail: %.64q is not a delivery id", deliveryID)
	}
	m := gomail.NewMsg(gomail.WithNoDefaultUserAgent())
	m.FromMailAddress(from)
	m.ToMailAddress(c.To)
	m.Subject(c.Subject)
	m.SetMessageIDWithValue(deliveryID + "@" + domainOf(from.Address))
	m.SetDate()
	m.SetGenHeader(gomail.Header("Auto-Submitted"), "auto-generated")
	m.SetBodyString(gomail.TypeTextPlain, c.Text)
	m.AddAlternativeString(gomail.TypeTextHTML, c.HTML)
	return envelope{DeliveryID: deliveryID, Template: c.Template, To: c.To.Address, Subject: c.Subject, Msg: m}, nil
}

// domainOf is the domain of an address, the right side of its Message-IDs.
func domainOf(addr string) string {
	return addr[strings.LastIndexByte(addr, '@')+1:]
}
