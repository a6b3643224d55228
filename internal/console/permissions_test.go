package console_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apitest"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/console"
)

// The one permission table: every workspace route of the console requires
// exactly the x-svc-permission of its API twin, and every role is refused
// (403, before anything is done) exactly where its API key would be.
func TestEveryRouteChecksItsTwinsPermission(t *testing.T) {
	t.Parallel()
	routes, err := console.Routes()
	require.NoError(t, err)
	require.NotEmpty(t, routes)

	// The twin's permission, read from the written contract.
	doc := apitest.Contract(t)
	twins := map[string]string{}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			perm, _ := op.Extensions["x-svc-permission"].(string)
			twins[op.OperationID] = perm
		}
	}
	for _, rt := range routes {
		if rt.Twin != "" {
			perm, ok := twins[rt.Twin]
			require.True(t, ok, "%s %s: twin %s is not an operation of the contract", rt.Method, rt.Path, rt.Twin)
			require.Equal(t, perm, rt.Permission, "%s %s", rt.Method, rt.Path)
		}
	}

	b := setup(t)
	browsers := map[string]*browser{}
	csrf := map[string]string{}
	for _, role := range auth.WorkspaceRoles {
		br, _ := b.signedInMember(t, role)
		browsers[role] = br
		p := br.get(t, "/")
		csrf[role] = hiddenFields(p.body)["csrf_token"]
		require.NotEmpty(t, csrf[role])
	}
	param := regexp.MustCompile(`:[a-z_]+`)
	for _, rt := range routes {
		path := b.workspacePath(strings.TrimPrefix(param.ReplaceAllString(rt.Path, "x_nothing"), "/"))
		for _, role := range auth.WorkspaceRoles {
			caller := auth.Caller{Role: role}
			br := browsers[role]
			var p page
			if rt.Method == http.MethodGet {
				p = br.get(t, path)
			} else {
				p = br.post(t, path, url.Values{"csrf_token": {csrf[role]}})
			}
			if caller.Allows(rt.Permission) {
				require.NotEqual(t, http.StatusForbidden, p.status, "%s %s as %s (needs %s)", rt.Method, rt.Path, role, rt.Permission)
				require.Less(t, p.status, 500, "%s %s as %s: %s", rt.Method, rt.Path, role, p.body)
			} else {
				require.Equal(t, http.StatusForbidden, p.status, "%s %s as %s (needs %s)", rt.Method, rt.Path, role, rt.Permission)
				require.Contains(t, p.body, "does not have the "+rt.Permission+" permission")
			}
		}
	}
}
