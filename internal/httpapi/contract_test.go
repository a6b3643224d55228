package httpapi

import (
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/openapi"
	"github.com/svcdev/svc/internal/auth"
)

// TestContractIsValid catches a malformed openapi.yaml before any server test.
func TestContractIsValid(t *testing.T) {
	t.Parallel()
	doc, err := openapi.Load()
	require.NoError(t, err)
	require.NoError(t, doc.Validate(t.Context()))
}

// TestFirstServerIsTheServingOrigin: the first server is relative, so that a
// client (the API page among them) resolves it against the address it fetched
// the document from, the installation itself; and kin-openapi's router, which
// matches requests against the servers, then matches any host.
func TestFirstServerIsTheServingOrigin(t *testing.T) {
	t.Parallel()
	doc, err := openapi.Load()
	require.NoError(t, err)
	require.NotEmpty(t, doc.Servers)
	require.Equal(t, "/", doc.Servers[0].URL)
}

// TestEveryOperationDeclaresItsPermission keeps the permission model in one place:
// each operation states x-svc-permission, and only operations that need no key
// (security: []) may say "none".
func TestEveryOperationDeclaresItsPermission(t *testing.T) {
	t.Parallel()
	doc, err := openapi.Load()
	require.NoError(t, err)
	valid := map[string]bool{auth.PermNone: true, auth.PermRead: true, auth.PermRun: true, auth.PermWrite: true, auth.PermAdmin: true, auth.PermOrganizationAdmin: true}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			perm, ok := op.Extensions[permissionExtension].(string)
			require.True(t, ok, "%s %s has no %s", method, path, permissionExtension)
			require.True(t, valid[perm], "%s %s: unknown permission %q", method, path, perm)
			public := op.Security != nil && len(*op.Security) == 0
			require.Equal(t, perm == auth.PermNone, public, "%s %s: permission %q but security %v", method, path, perm, op.Security)
		}
	}
}

// TestEveryAPIOperationDocumentsTheEdgeAnswers keeps the contract honest about
// what the shared middleware can answer on any API operation: 406 (Accept), 500
// and 503 (start-up, a lost database); 408, 413 and 415 wherever a body is read; and
// 401 and 429 on every operation that needs a key.
func TestEveryAPIOperationDocumentsTheEdgeAnswers(t *testing.T) {
	t.Parallel()
	doc, err := openapi.Load()
	require.NoError(t, err)
	for path, item := range doc.Paths.Map() {
		if !strings.HasPrefix(path, "/api/v1/") {
			continue
		}
		for method, op := range item.Operations() {
			if slices.Contains(op.Tags, "static") || isStaticAPIPath(path) {
				continue
			}
			want := []int{406, 500, 503}
			if op.RequestBody != nil {
				want = append(want, 408, 413, 415)
			}
			if op.Security == nil || len(*op.Security) > 0 {
				want = append(want, 401, 429)
			}
			for _, status := range want {
				require.NotNil(t, op.Responses.Status(status), "%s %s does not document %d", method, path, status)
			}
		}
	}
}

// TestBinaryOperationsAreDeclaredConsistently: x-svc-binary is "request" on
// operations whose only body is optional raw bytes (the edge hides it from
// the validator, which then sees none), and "response" on operations that
// answer raw bytes.
func TestBinaryOperationsAreDeclaredConsistently(t *testing.T) {
	t.Parallel()
	doc, err := openapi.Load()
	require.NoError(t, err)
	seen := map[string]int{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			v, ok := op.Extensions[binaryExtension]
			if !ok {
				continue
			}
			seen[v.(string)]++
			switch v {
			case binaryRequest:
				require.NotNil(t, op.RequestBody, "%s %s", method, path)
				rb := op.RequestBody.Value
				require.False(t, rb.Required, "%s %s: the validator sees no body, so it must be optional", method, path)
				require.Len(t, rb.Content, 1, "%s %s", method, path)
				mt := rb.Content.Get("*/*")
				require.NotNil(t, mt, "%s %s: any media type", method, path)
				require.Equal(t, "binary", mt.Schema.Value.Format, "%s %s", method, path)
				// No type: generated clients then take bytes (a Blob, an io.Reader)
				// rather than a string (docs/decisions/0054-contract-lint.md).
				require.Nil(t, mt.Schema.Value.Type, "%s %s: an upload's schema has no type", method, path)
			case binaryResponse:
				ok := false
				for _, r := range op.Responses.Map() {
					if mt := r.Value.Content.Get("*/*"); mt != nil && mt.Schema.Value.Format == "binary" {
						ok = true
					}
				}
				require.True(t, ok, "%s %s answers no raw bytes", method, path)
			default:
				t.Fatalf("%s %s: %s must be %q or %q, got %v", method, path, binaryExtension, binaryRequest, binaryResponse, v)
			}
		}
	}
	require.Positive(t, seen[binaryRequest], "the asset upload is declared")
	require.Positive(t, seen[binaryResponse], "the asset download is declared")
}

// TestChangesRequireIfMatch: every operation that takes If-Match requires it
// (the services refuse a change without it) and documents both refusals, 412
// and 428; every operation that documents 428 takes it.
func TestChangesRequireIfMatch(t *testing.T) {
	t.Parallel()
	doc, err := openapi.Load()
	require.NoError(t, err)
	n := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			params := append(openapi3.Parameters{}, item.Parameters...)
			params = append(params, op.Parameters...)
			ifMatch := params.GetByInAndName(openapi3.ParameterInHeader, "If-Match")
			if ifMatch == nil {
				require.Nil(t, op.Responses.Status(428), "%s %s documents 428 but takes no If-Match", method, path)
				continue
			}
			n++
			require.True(t, ifMatch.Required, "%s %s: If-Match is required", method, path)
			require.NotNil(t, op.Responses.Status(412), "%s %s documents 412", method, path)
			require.NotNil(t, op.Responses.Status(428), "%s %s documents 428", method, path)
		}
	}
	require.Positive(t, n)
}

// TestRequestSchemasStateNoDefaults: no schema a request body uses has a
// default. Generators make a member with a default required in the types they
// generate (openapi-typescript), so a request would have to send what the
// service would fill in; request schemas state it in their description
// ("Default: ...") and the services apply it.
func TestRequestSchemasStateNoDefaults(t *testing.T) {
	t.Parallel()
	doc, err := openapi.Load()
	require.NoError(t, err)
	seen := map[*openapi3.Schema]bool{}
	var walk func(where string, ref *openapi3.SchemaRef)
	walk = func(where string, ref *openapi3.SchemaRef) {
		if ref == nil || ref.Value == nil || seen[ref.Value] {
			return
		}
		s := ref.Value
		seen[s] = true
		require.Nil(t, s.Default, "%s has a default", where)
		for name, p := range s.Properties {
			walk(where+"."+name, p)
		}
		for _, list := range [][]*openapi3.SchemaRef{s.AllOf, s.OneOf, s.AnyOf} {
			for _, sub := range list {
				walk(where, sub)
			}
		}
		walk(where+"[]", s.Items)
		walk(where+"{}", s.AdditionalProperties.Schema)
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.RequestBody == nil || op.RequestBody.Value == nil {
				continue
			}
			for ct, mt := range op.RequestBody.Value.Content {
				walk(method+" "+path+" "+ct, mt.Schema)
			}
		}
	}
	require.NotEmpty(t, seen)
}

// TestContractFreeFormObjectsDeclareAdditionalProperties: an object schema
// without properties (metadata and other free JSON) says what its values may
// be, so generators type it as a map of anything rather than an empty object.
func TestContractFreeFormObjectsDeclareAdditionalProperties(t *testing.T) {
	t.Parallel()
	doc, err := openapi.Load()
	require.NoError(t, err)
	seen := map[*openapi3.Schema]bool{}
	var walk func(where string, ref *openapi3.SchemaRef)
	walk = func(where string, ref *openapi3.SchemaRef) {
		if ref == nil || ref.Value == nil || seen[ref.Value] {
			return
		}
		s := ref.Value
		seen[s] = true
		// An enum lists the values (the null of a nullable reference): not free-form.
		if s.Type.Is(openapi3.TypeObject) && len(s.Properties) == 0 && len(s.AllOf)+len(s.OneOf)+len(s.AnyOf)+len(s.Enum) == 0 {
			ap := s.AdditionalProperties
			require.True(t, ap.Has != nil || ap.Schema != nil, "%s: a free-form object declares additionalProperties", where)
		}
		for name, p := range s.Properties {
			walk(where+"."+name, p)
		}
		for _, list := range [][]*openapi3.SchemaRef{s.AllOf, s.OneOf, s.AnyOf} {
			for _, sub := range list {
				walk(where, sub)
			}
		}
		walk(where+"[]", s.Items)
		walk(where+"{}", s.AdditionalProperties.Schema)
		if s.Not != nil {
			walk(where, s.Not)
		}
	}
	for name, s := range doc.Components.Schemas {
		walk(name, s)
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			where := method + " " + path
			for _, p := range op.Parameters {
				if p.Value != nil {
					walk(where+" "+p.Value.Name, p.Value.Schema)
				}
			}
			if op.RequestBody != nil && op.RequestBody.Value != nil {
				for ct, mt := range op.RequestBody.Value.Content {
					walk(where+" request "+ct, mt.Schema)
				}
			}
			for status, r := range op.Responses.Map() {
				if r.Value == nil {
					continue
				}
				for ct, mt := range r.Value.Content {
					walk(where+" "+status+" "+ct, mt.Schema)
				}
			}
		}
	}
}
