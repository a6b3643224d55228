package connection

import (
	"context"
	"time"

	"github.com/svcdev/svc/internal/endpoint"
)

// Status is the state of an authorization operation.
type Status string

// The statuses of an operation. Only pending changes; the others are final.
const (
	StatusPending   Status = "pending"
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
	StatusExpired   Status = "expired"
)

// Authorizer is a connector vendor's side of an authorization: it asks the
// vendor to start connecting an account and later how that is going. svc never
// sees the user's consent itself; the vendor does, and Check reports it.
// Implementations call the vendor through the endpoint policy and must be safe
// for concurrent use.
type Authorizer interface {
	// Begin asks the vendor to start connecting an account. A pending answer
	// carries the RedirectURL the user goes to and the VendorState Check needs.
	Begin(ctx context.Context, r Request) (Progress, error)
	// Check asks how the authorization Begin started is going, given the
	// VendorState Begin returned.
	Check(ctx context.Context, r Request, state map[string]any) (Progress, error)
}

// Request is what a vendor call needs of the provider and the connection.
type Request struct {
	// ProviderConfig is the provider's config with its type's defaults filled in.
	ProviderConfig map[string]any
	// ProviderCredential is the provider's opened credential (nil when none).
	ProviderCredential map[string]any
	// Config is the connection's config.
	Config map[string]any
	// UserID is the vendor's user the account is connected under: the
	// connection's account, else the connection's id.
	UserID string
}

// Progress is where an authorization stands at the vendor.
type Progress struct {
	Status Status
	// RedirectURL is where the user goes to consent (pending).
	RedirectURL string
	// VendorState is what Check needs later (pending). It is sealed.
	VendorState map[string]any
	// Credential is what the connection presents from now on (succeeded). It
	// must fit the type's connection credential schema.
	Credential map[string]any
	// Account is the vendor's user the account was connected under
	// (succeeded); empty when the vendor does not say.
	Account string
	// Message says why it failed or expired, in text safe to show: never the
	// credential, an address or the vendor's answer.
	Message string
}

// VendorError is a vendor call that did not give an answer. Msg is safe to
// show, like Progress.Message. A Transient error (a timeout, a 5xx, rate
// limiting) is worth retrying; Check's transient errors leave the operation
// pending until its deadline.
type VendorError struct {
	Msg       string
	Transient bool
	Err       error
}

func (e *VendorError) Error() string {
	if e.Err != nil {
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}

func (e *VendorError) Unwrap() error { return e.Err }

// Vendors maps connector provider type ids to their authorizers.
type Vendors map[string]Authorizer

// NewVendors returns the authorizers of the installed connector types, calling
// out through policy with each call bounded by timeout.
func NewVendors(policy *endpoint.Policy, timeout time.Duration) Vendors {
	return Vendors{"composio": NewComposio(policy.HTTPClient(timeout), timeout)}
}
