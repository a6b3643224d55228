// Package catalog is the catalog of the provider types svc has installed:
// for each vendor svc can talk to, its kind, the JSON Schemas of a provider's
// config and credential, where to get a credential, whether the provider test
// can probe it, and the kind-specific description (model APIs with their
// settings schemas, web operations, environment capabilities). One small file
// per vendor declares its type; the Registry compiles every schema once and
// refuses to start on a broken one.
package catalog

import (
	"fmt"
	"strings"

	"github.com/svcdev/svc/internal/apperr"
)

// Kind is the kind of a provider: which collection it lives in and what uses it.
type Kind string

// The provider kinds, in the order the API lists them.
const (
	KindModel       Kind = "model"
	KindWeb         Kind = "web"
	KindEnvironment Kind = "environment"
	KindConnector   Kind = "connector"
	KindMemory      Kind = "memory"
)

// Kinds lists every kind.
var Kinds = []Kind{KindModel, KindWeb, KindEnvironment, KindConnector, KindMemory}

// ParseKind returns the kind named s, and false for an unknown name.
func ParseKind(s string) (Kind, bool) {
	for _, k := range Kinds {
		if string(k) == s {
			return k, true
		}
	}
	return "", false
}

// Operation is something a web provider serves to the web toolset.
type Operation string

// The web operations.
const (
	OperationSearch Operation = "search"
	OperationFetch  Operation = "fetch"
)

// ProbeKind says what the provider test (POST …/test) does for a type. It is
// data here; the probes themselves live with the providers.
type ProbeKind string

// The probe kinds. Only ProbeUnsupported answers `unsupported`; the others can
// answer `succeeded` or `failed` (docs/decisions/0016-provider-tests.md).
const (
	// ProbeUnsupported: the test answers `unsupported` without any request.
	ProbeUnsupported ProbeKind = "unsupported"
	// ProbeAuthenticatedRead: one read-only authenticated request that costs
	// nothing, such as listing the models or the account's configuration.
	ProbeAuthenticatedRead ProbeKind = "authenticated_read"
	// ProbeEnginePing: ping the container engine; nothing is created.
	ProbeEnginePing ProbeKind = "engine_ping"
	// ProbeNamespacePage: list one page of a namespace that no memory uses.
	ProbeNamespacePage ProbeKind = "namespace_page"
)

// ProbeRequest is the one inexpensive, read-only HTTP request the provider test
// sends for an authenticated_read or namespace_page probe. Its strings may hold
// {member} placeholders, replaced by the config's string member of that name
// (or the member's schema default), and {namespace}, replaced by a namespace no
// memory uses. A query parameter or header whose value comes out empty is left
// out.
type ProbeRequest struct {
	// Base is the config member holding the base URL; when the config leaves it
	// out, its schema default is used, then Fallback.
	Base     string
	Fallback string
	// Path is appended to the base URL.
	Path    string
	Query   map[string]string
	Headers map[string]string
	// AuthHeader carries the credential's api_key, after AuthPrefix (such as
	// "Bearer "). No header is sent when no credential is stored.
	AuthHeader string
	AuthPrefix string
	// Expect names a member a JSON object answer must have; empty accepts any
	// JSON document.
	Expect string
}

// bearerModels is the request of the many vendors that serve GET {base_url}/models
// with a bearer key and answer an OpenAI-style list.
func bearerModels() *ProbeRequest {
	return &ProbeRequest{Base: "base_url", Path: "/models", AuthHeader: "Authorization", AuthPrefix: "Bearer ", Expect: "data"}
}

// withHeaders adds headers to a probe request.
func withHeaders(r *ProbeRequest, h map[string]string) *ProbeRequest {
	r.Headers = h
	return r
}

// API is one model API a model type speaks, with the schema of a model's
// settings on it.
type API struct {
	// ID names the wire protocol family, e.g. chat_completions or messages.
	ID       string
	Settings *Schema
}

// ValidateSettings validates a model's settings for this API; errors name
// fields under "settings".
func (a API) ValidateSettings(v any) error { return a.Settings.validate(v, "settings") }

// Environment describes an environment type: what an environment template's
// config holds and what svc can do with the environments.
type Environment struct {
	Schema *Schema
	// ManagedInstances: svc creates the environments itself and maintains them
	// (stops or deletes idle ones).
	ManagedInstances bool
	Stop             bool
	Destroy          bool
}

// Connector describes a connector type: the shapes of the config and the
// credential of a connection made through a provider of the type.
type Connector struct {
	// Config is what names the account's app at the vendor (for Composio, the
	// auth config the account is connected with).
	Config *Schema
	// Credential is what a connection presents to act as the account; it is
	// write-only and sealed like a provider's credential.
	Credential *Schema
}

// Type is one installed provider type. Values are immutable once registered.
type Type struct {
	ID                 string
	DisplayName        string
	Kind               Kind
	Config             *Schema
	Credential         *Schema
	CredentialRequired bool
	// SetupURL is the vendor's page for creating a credential (or, for types
	// without one, for setting the service up). Empty only for local, which has
	// no vendor.
	SetupURL string
	Probe    ProbeKind
	// Engine names the config member holding a container-engine address
	// (unix:///socket or tcp://host:port), checked by the endpoint policy as an
	// engine; docker only.
	Engine string
	// Request is the probe's request for authenticated_read and namespace_page
	// probes; nil for the others.
	Request *ProbeRequest
	// NamespaceDelete is the path, below Request's base URL, of the vendor's
	// request that deletes a namespace with every record in it (sent as
	// DELETE, with Request's headers and credential; {namespace} is the
	// path-escaped namespace). Set on memory types only: the outbox's
	// memory_namespace_purge sends it when a record memory is deleted.
	NamespaceDelete string

	// APIs is set on model types only.
	APIs []API
	// Operations is set on web types only.
	Operations []Operation
	// Environment is set on environment types only.
	Environment *Environment
	// Connector is set on connector types only.
	Connector *Connector
}

// TestSupported reports whether the provider test can answer anything other
// than `unsupported` for this type.
func (t Type) TestSupported() bool { return t.Probe != ProbeUnsupported }

// ValidateConfig validates a provider's config; errors name fields under
// "config". A nil config is validated as the empty object.
func (t Type) ValidateConfig(v any) error { return t.Config.validate(v, "config") }

// ValidateCredential validates a provider's credential; errors name fields under
// "credential" and never repeat the submitted values.
func (t Type) ValidateCredential(v any) error { return t.Credential.validate(v, "credential") }

// ValidateEnvironment validates an environment template's config for an
// environment type; errors name fields under "config".
func (t Type) ValidateEnvironment(v any) error {
	if t.Environment == nil {
		return apperr.InvalidField("type", fmt.Sprintf("%s is not an environment provider type", t.ID))
	}
	return t.Environment.Schema.validate(v, "config")
}

// ValidateConnectionConfig validates a connection's config for a connector
// type; errors name fields under "config".
func (t Type) ValidateConnectionConfig(v any) error {
	if t.Connector == nil {
		return apperr.InvalidField("provider_id", fmt.Sprintf("%s is not a connector provider type", t.ID))
	}
	return t.Connector.Config.validate(v, "config")
}

// ValidateConnectionCredential validates a connection's credential for a
// connector type; errors name fields under "credential" and never repeat the
// submitted values.
func (t Type) ValidateConnectionCredential(v any) error {
	if t.Connector == nil {
		return apperr.InvalidField("provider_id", fmt.Sprintf("%s is not a connector provider type", t.ID))
	}
	return t.Connector.Credential.validate(v, "credential")
}

// API returns the model API id of a model type, and false when the type does
// not speak it.
func (t Type) API(id string) (API, bool) {
	for _, a := range t.APIs {
		if a.ID == id {
			return a, true
		}
	}
	return API{}, false
}

// schemas lists every schema of the type, named for error messages.
func (t Type) schemas() map[string]*Schema {
	out := map[string]*Schema{"config": t.Config, "credential": t.Credential}
	for _, a := range t.APIs {
		out["apis."+a.ID+".settings"] = a.Settings
	}
	if t.Environment != nil {
		out["environment"] = t.Environment.Schema
	}
	if t.Connector != nil {
		out["connection.config"] = t.Connector.Config
		out["connection.credential"] = t.Connector.Credential
	}
	return out
}

// check reports a declaration that breaks the kind's shape.
func (t Type) check() error {
	switch {
	case t.ID == "" || t.DisplayName == "":
		return fmt.Errorf("provider type %q: id and display name are required", t.ID)
	case t.SetupURL == "" && t.ID != LocalType:
		return fmt.Errorf("provider type %q: no setup URL (only local has none)", t.ID)
	case t.SetupURL != "" && !strings.HasPrefix(t.SetupURL, "https://"):
		return fmt.Errorf("provider type %q: setup URL is not https", t.ID)
	case t.Config == nil || t.Credential == nil:
		return fmt.Errorf("provider type %q: config and credential schemas are required", t.ID)
	case t.Probe == "":
		return fmt.Errorf("provider type %q: no probe kind", t.ID)
	case (t.Probe == ProbeAuthenticatedRead || t.Probe == ProbeNamespacePage) != (t.Request != nil):
		return fmt.Errorf("provider type %q: HTTP probes, and only they, declare their request", t.ID)
	case (t.Kind == KindModel) != (len(t.APIs) > 0):
		return fmt.Errorf("provider type %q: model types, and only they, list APIs", t.ID)
	case (t.Kind == KindWeb) != (len(t.Operations) > 0):
		return fmt.Errorf("provider type %q: web types, and only they, list operations", t.ID)
	case (t.Kind == KindEnvironment) != (t.Environment != nil):
		return fmt.Errorf("provider type %q: environment types, and only they, describe environments", t.ID)
	case (t.Kind == KindConnector) != (t.Connector != nil):
		return fmt.Errorf("provider type %q: connector types, and only they, describe connections", t.ID)
	case (t.Kind == KindMemory) != (t.NamespaceDelete != ""):
		return fmt.Errorf("provider type %q: memory types, and only they, declare their namespace delete", t.ID)
	case t.NamespaceDelete != "" && (t.Request == nil || !strings.Contains(t.NamespaceDelete, "{namespace}")):
		return fmt.Errorf("provider type %q: a namespace delete needs the probe's request and a {namespace} in its path", t.ID)
	}
	return nil
}
