// Package hosted implements sandbox.Driver for the hosted sandbox
// environment types (internal/provider/catalog/env_*.go): e2b, daytona, runloop,
// fly_machines, kubernetes and modal. Each driver speaks its vendor's public HTTP API
// through the endpoint policy's guarded client, except modal, which speaks Modal's
// gRPC API through the policy's guarded dialer (NewModal); see
// docs/decisions/0031-hosted-sandboxes.md for what each vendor offers and
// what is left out.
//
// Paths given to an Instance are relative to the instance's working
// directory, which the handle records (e2b's /home/user, Daytona's work
// directory, ...). They are confined lexically: absolute paths and paths that
// climb out with ".." are refused with sandbox.ErrPath. A symbolic link made
// inside the sandbox may still point elsewhere in it; the whole sandbox is
// the tenant's own machine, so that reaches nothing of anyone else's.
package hosted

import (
	"crypto/tls"
	"net/http"
	"time"

	"github.com/svcdev/svc/internal/sandbox"
)

// Type ids served by this package, as declared in internal/provider/catalog.
const (
	TypeE2B         = "e2b"
	TypeDaytona     = "daytona"
	TypeRunloop     = "runloop"
	TypeFlyMachines = "fly_machines"
	TypeKubernetes  = "kubernetes"
	TypeModal       = "modal"
)

// New returns the drivers of the HTTP hosted types this package implements,
// by type id (modal, which dials gRPC itself, comes from NewModal). client is the endpoint policy's guarded client, built without an
// overall time-out (commands run for up to an hour; each call is bounded by
// its context instead). Kubernetes providers with their own CA certificate
// need NewWithTLS.
func New(client *http.Client) map[string]sandbox.Driver { return NewWithTLS(client, nil) }

// NewWithTLS is New with withTLS, which builds a guarded client with a TLS
// configuration (a Kubernetes API server's own CA): for example
// func(c *tls.Config) *http.Client { return policy.HTTPClient(0, endpoint.WithTLSConfig(c)) }.
func NewWithTLS(client *http.Client, withTLS func(*tls.Config) *http.Client) map[string]sandbox.Driver {
	return map[string]sandbox.Driver{
		TypeE2B:         NewE2B(client),
		TypeDaytona:     NewDaytona(client),
		TypeRunloop:     NewRunloop(client),
		TypeFlyMachines: NewFlyMachines(client),
		TypeKubernetes:  NewKubernetes(client, withTLS),
	}
}

// Bounds of the calls drivers make themselves.
const (
	// startWait bounds waiting for an instance to reach its running state
	// after a create, start or resume.
	startWait = 10 * time.Minute
	// pollInterval is the pause between two state reads while waiting.
	pollInterval = time.Second
	// controlTimeout bounds one control-plane call (create, get, stop...).
	controlTimeout = 2 * time.Minute
	// killTimeout bounds the call that kills a command whose time-out passed.
	killTimeout = 10 * time.Second
)

// Types lists the type ids this package serves.
func Types() []string {
	return []string{TypeE2B, TypeDaytona, TypeRunloop, TypeFlyMachines, TypeKubernetes, TypeModal}
}
