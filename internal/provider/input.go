package provider

import (
	"context"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/provider/probe"
	"github.com/svcdev/svc/internal/secret"
)

// CreateInput is a new provider of the collection's kind.
type CreateInput struct {
	Type string
	Name string
	// Config may be nil: the empty object.
	Config map[string]any
	// Credential is nil when none is given.
	Credential map[string]any
	// ExtraHeaders is for model providers only; nil when none are given.
	ExtraHeaders map[string]string
}

// Change is a PATCH member that can be left out, set, or set to null; it is
// the shared tri-state of internal/secret.
type Change[T any] = secret.Change[T]

// Set returns a change that replaces the stored value with v.
func Set[T any](v T) Change[T] { return secret.Set(v) }

// Remove returns a change that removes the stored value.
func Remove[T any]() Change[T] { return secret.Remove[T]() }

// UpdateInput is a PATCH of a provider: members left out keep their values.
type UpdateInput struct {
	ID           string
	IfMatch      *string
	Enabled      *bool
	Name         *string
	Config       map[string]any // nil: keep
	Credential   Change[map[string]any]
	ExtraHeaders Change[map[string]string] // model providers only
}

// Limits of extra headers; the contract states the same.
const (
	maxExtraHeaders        = 32
	maxExtraHeaderName     = 128
	maxExtraHeaderValueLen = 8192
)

// reservedHeaders are set by svc itself on calls to vendors: authentication
// (including the vendors' own key headers and AWS signing), message framing,
// content negotiation and hop-by-hop headers. A user-supplied value could break
// the request or replace the provider's credential, so they are refused.
var reservedHeaders = []string{
	"accept-encoding", "api-key", "authorization", "connection", "content-encoding",
	"content-length", "content-type", "cookie", "expect", "host", "keep-alive",
	"proxy-authorization", "proxy-connection", "te", "trailer", "transfer-encoding",
	"upgrade", "x-api-key", "x-goog-api-key",
}

// reservedHeaderPrefixes are header families svc computes (AWS SigV4).
var reservedHeaderPrefixes = []string{"x-amz-"}

// validateExtraHeaders checks names (RFC 9110 tokens, not reserved, unique
// regardless of case) and values (no CR, LF, NUL or other control characters
// except tab). Errors name extra_headers.<name> and never repeat a value.
func validateExtraHeaders(h map[string]string) error {
	if len(h) > maxExtraHeaders {
		return apperr.InvalidField("extra_headers", "must have at most 32 headers")
	}
	var details []apperr.Detail
	seen := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(h)) {
		lower := strings.ToLower(name)
		if !validFieldName(name) {
			details = append(details, apperr.Detail{Field: "extra_headers", Reason: "header names must be HTTP field names (RFC 9110 tokens) of at most 128 characters"})
			continue
		}
		field := "extra_headers." + name
		switch {
		case slices.Contains(reservedHeaders, lower) || hasAnyPrefix(lower, reservedHeaderPrefixes):
			details = append(details, apperr.Detail{Field: field, Reason: "is set by svc and cannot be overridden"})
		case seen[lower]:
			details = append(details, apperr.Detail{Field: field, Reason: "is given twice (header names are case-insensitive)"})
		case !validFieldValue(h[name]):
			details = append(details, apperr.Detail{Field: field, Reason: "must not contain CR, LF, NUL or other control characters, and must be at most 8192 bytes of UTF-8"})
		}
		seen[lower] = true
	}
	if len(details) > 0 {
		return apperr.InvalidArgument("extra_headers is invalid", details...)
	}
	return nil
}

// validFieldName reports whether s is an RFC 9110 token (tchar+).
func validFieldName(s string) bool {
	if s == "" || len(s) > maxExtraHeaderName {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}

// validFieldValue reports whether s is a header value svc will send as is:
// valid UTF-8 without control characters other than horizontal tab (RFC 9110
// section 5.5 field-value; CR, LF and NUL are the dangerous ones).
func validFieldValue(s string) bool {
	if len(s) > maxExtraHeaderValueLen || !utf8.ValidString(s) {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool { return (r < 0x20 && r != '\t') || r == 0x7f }) < 0
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// ValidateName checks the name of a provider (or of another resource named
// the same way, such as a connection): 1 to 200 characters of valid UTF-8
// without control characters (the contract's Name).
func ValidateName(name string) error {
	n := utf8.RuneCountInString(name)
	switch {
	case !utf8.ValidString(name):
		return apperr.InvalidField("name", "must be valid UTF-8")
	case n < 1 || n > 200:
		return apperr.InvalidField("name", "must have 1 to 200 characters")
	case strings.IndexFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		return apperr.InvalidField("name", "must not contain control characters")
	}
	return nil
}

// endpointFields returns the names of the config members of t that are URLs:
// the top-level properties its configuration schema declares with
// `format: uri` (every URL-valued member of every type is declared so; see
// docs/decisions/0011), sorted.
func endpointFields(t catalog.Type) []string {
	props, _ := t.Config.Document()["properties"].(map[string]any)
	var out []string
	for name, p := range props {
		if m, ok := p.(map[string]any); ok && m["format"] == "uri" {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// validateConfig validates cfg against the type's schema and the operator's
// ConfigCheck of the type, then checks every
// URL member present in it against the endpoint policy (naming config.<member>).
// Defaults the request leaves out are not checked here: they are the vendors'
// public endpoints, and every call is checked again when it is dialled. A
// container-engine address is checked with the credential the provider will
// hold (cred), which decides whether it is called over TLS.
func (s *Service) validateConfig(ctx context.Context, t catalog.Type, cfg, cred map[string]any) error {
	if err := t.ValidateConfig(cfg); err != nil {
		return err
	}
	if check := s.checks[t.ID]; check != nil {
		if err := check(cfg); err != nil {
			return err
		}
	}
	if err := s.checkEngine(ctx, t, cfg, cred); err != nil {
		return err
	}
	for _, name := range s.endpoints[t.ID] {
		raw, ok := cfg[name].(string)
		if !ok {
			continue
		}
		if err := s.policy.CheckURL(ctx, "config."+name, raw); err != nil {
			return err
		}
	}
	return nil
}

// checkEngine checks the container-engine address of an engine type, given or
// defaulted, against the endpoint policy.
func (s *Service) checkEngine(ctx context.Context, t catalog.Type, cfg, cred map[string]any) error {
	if t.Engine == "" {
		return nil
	}
	addr, ok := cfg[t.Engine].(string)
	if !ok {
		addr, _ = t.Config.Defaults()[t.Engine].(string)
	}
	return s.policy.CheckEngine(ctx, "config."+t.Engine, addr, probe.EngineUsesTLS(cred))
}
