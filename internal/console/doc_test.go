package console_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/console"
)

// docs/console.md lists every workspace route with its API twin and
// permission, one table row each; a route added without its row fails here
// with the rows to add.
func TestConsoleDocListsEveryRoute(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docs/console.md")
	require.NoError(t, err)
	doc := string(raw)
	routes, err := console.Routes()
	require.NoError(t, err)
	var missing []string
	for _, rt := range routes {
		row := routeRow(rt)
		if !strings.Contains(doc, row) {
			missing = append(missing, row)
		}
	}
	require.Empty(t, missing, "docs/console.md lacks these rows:\n%s", strings.Join(missing, "\n"))
	rows := regexp.MustCompile("(?m)^\\| (GET|POST) \\| `/w/").FindAllString(doc, -1)
	require.Len(t, rows, len(routes), "docs/console.md lists routes the console does not have")
}

// routeRow is a route's row in docs/console.md.
func routeRow(rt console.RouteInfo) string {
	path := regexp.MustCompile(`:([a-z_]+)`).ReplaceAllString(rt.Path, "{$1}")
	twin := "—"
	if rt.Twin != "" {
		twin = "`" + rt.Twin + "`"
	}
	return "| " + rt.Method + " | `/w/{workspace}" + path + "` | " + twin + " | " + rt.Permission + " |"
}
