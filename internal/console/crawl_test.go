package console_test

import (
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/testfactory"
)

var (
	linkRE     = regexp.MustCompile(`<a [^>]*href="(/w/[^"#?]*)(?:\?[^"]*)?"`)
	formRE     = regexp.MustCompile(`(?s)<form\b([^>]*)>(.*?)</form>`)
	controlRE  = regexp.MustCompile(`<(input|select|textarea)\b([^>]*)>`)
	labelForRE = regexp.MustCompile(`<label\b[^>]*for="([^"]+)"`)
	attrRE     = regexp.MustCompile(`\b(type|id|name|aria-label|aria-labelledby|method)="([^"]*)"`)
)

// Every workspace page a person can reach by following links, as an admin
// of a workspace with something in each section, keeps the console's
// promises: it renders (200), carries the security headers and no inline
// script or style, stays small, labels every input, and puts the CSRF
// token in every form that posts.
func TestEveryReachablePageIsSmallLabelledAndSafe(t *testing.T) {
	t.Parallel()
	b := setup(t)
	owner := testfactory.Owner{WorkspaceID: b.admin.WorkspaceID, PrincipalID: b.admin.PrincipalID}
	testfactory.Agent(t, b.h.App.Pool, owner, &testfactory.AgentOpts{Name: "crawled agent"})
	testfactory.Subscription(t, b.h.App.Pool, owner, nil)

	br := b.browser(t)
	br.signIn(t, b.admin.Email, adminPassword)
	start := b.workspacePath("runs")
	seen := map[string]bool{start: true, b.workspacePath("api-keys"): true}
	queue := []string{start, b.workspacePath("api-keys")}
	for len(queue) > 0 && len(seen) < 300 {
		path := queue[0]
		queue = queue[1:]
		p := br.get(t, path)
		require.Equal(t, http.StatusOK, p.status, "GET %s: %.500s", path, p.body)
		requirePageHeaders(t, p)
		require.Less(t, len(p.body), 100<<10, "%s is %d bytes", path, len(p.body))
		requireLabelled(t, path, p.body)
		for _, m := range linkRE.FindAllStringSubmatch(p.body, -1) {
			next := html.UnescapeString(m[1])
			if strings.HasPrefix(next, "/w/"+b.admin.WorkspaceID) && !seen[next] && !strings.HasSuffix(next, "/stream") && !strings.Contains(next, "/content") {
				seen[next] = true
				queue = append(queue, next)
			}
		}
	}
	t.Logf("checked %d pages", len(seen))
}

// requireLabelled checks that every visible form control of a page has a
// label (around it, by for=, or by aria-label) and every POST form carries
// the CSRF token.
func requireLabelled(t *testing.T, path, body string) {
	t.Helper()
	labelled := map[string]bool{}
	for _, m := range labelForRE.FindAllStringSubmatch(body, -1) {
		labelled[m[1]] = true
	}
	for _, f := range formRE.FindAllStringSubmatch(body, -1) {
		if attrs(f[1])["method"] == "post" {
			require.Contains(t, f[2], `name="csrf_token"`, "%s: a form that posts carries the CSRF token", path)
		}
	}
	// Controls inside a <label> are labelled by it: strip those labels first.
	rest := regexp.MustCompile(`(?s)<label\b.*?</label>`).ReplaceAllString(body, "")
	for _, m := range controlRE.FindAllStringSubmatch(rest, -1) {
		a := attrs(m[2])
		if a["type"] == "hidden" || a["type"] == "submit" || a["type"] == "button" {
			continue
		}
		ok := a["aria-label"] != "" || a["aria-labelledby"] != "" || (a["id"] != "" && labelled[a["id"]])
		require.True(t, ok, "%s: <%s %s> has no label", path, m[1], m[2])
	}
}

func attrs(s string) map[string]string {
	out := map[string]string{}
	for _, m := range attrRE.FindAllStringSubmatch(s, -1) {
		out[m[1]] = m[2]
	}
	return out
}
