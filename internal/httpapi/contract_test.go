package httpapi

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/spec"
	"github.com/svcdev/svc/internal/auth"
)

// TestContractIsValid catches a malformed openapi.yaml before any server test.
func TestContractIsValid(t *testing.T) {
	t.Parallel()
	doc, err := spec.GetSpec()
	require.NoError(t, err)
	require.NoError(t, doc.Validate(t.Context()))
}

// TestEveryOperationDeclaresItsPermission keeps the permission model in one place:
// each operation states x-svc-permission, and only operations that need no key
// (security: []) may say "none".
func TestEveryOperationDeclaresItsPermission(t *testing.T) {
	t.Parallel()
	doc, err := spec.GetSpec()
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
// and 503 (start-up, a lost database); 413 and 415 wherever a body is read; and
// 401 and 429 on every operation that needs a key.
func TestEveryAPIOperationDocumentsTheEdgeAnswers(t *testing.T) {
	t.Parallel()
	doc, err := spec.GetSpec()
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
				want = append(want, 413, 415)
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
