package connection_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/connection"
	"github.com/svcdev/svc/internal/connection/composiotest"
	"github.com/svcdev/svc/internal/provider"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/secret"
	connectiontool "github.com/svcdev/svc/internal/tool/connection"
)

// TestToolsOfferAndCall: every action of the connection's toolkit is a tool
// with Composio's description and input schema; a call executes it as the
// connected account, at the version it was listed at, and answers its data.
func TestToolsOfferAndCall(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.AddTools(githubTools()...)
	b.srv.AddTools(composiotest.Tool{Slug: "GMAIL_SEND_EMAIL", Toolkit: "gmail", Version: "20250101_00", Description: "Sends an email."})
	conn, account := b.connect(t, b.caller, b.provider, "github", "Work GitHub")

	tools, err := b.tools.Tools(t.Context(), b.caller.WorkspaceID, refs(conn.ID, nil))
	require.NoError(t, err)
	require.Len(t, tools, 2, "the gmail action is another toolkit's")
	require.Equal(t, "GITHUB_CREATE_AN_ISSUE", tools[0].Def.Name)
	require.Equal(t, "GITHUB_LIST_REPOSITORIES", tools[1].Def.Name)
	create := tools[0]
	require.True(t, contains(create.Def.Description, "Creates a new issue in a GitHub repository.", `"Work GitHub"`, "github"), create.Def.Description)
	require.NotContains(t, create.Def.Description, "Only the first")
	var schema map[string]any
	require.NoError(t, json.Unmarshal(create.Def.Parameters, &schema))
	require.Equal(t, "object", schema["type"])
	require.Equal(t, []any{"owner", "repo", "title"}, schema["required"])

	lists := b.srv.ToolLists()
	require.Len(t, lists, 1)
	require.Equal(t, "github", lists[0].Get("toolkit_slug"))
	require.Equal(t, "latest", lists[0].Get("toolkit_versions"))
	require.Equal(t, "64", lists[0].Get("limit"))
	require.False(t, lists[0].Has("tool_slugs"))

	res := call(t, create, `{"owner":"acme","repo":"site","title":"Broken link"}`)
	require.False(t, res.IsError, res.Text)
	require.JSONEq(t, `{"number":42,"title":"Broken link"}`, res.Text)
	ex := b.srv.Executions()
	require.Len(t, ex, 1)
	require.Equal(t, composiotest.Execution{
		Slug: "GITHUB_CREATE_AN_ISSUE", ConnectedAccountID: account, UserID: *conn.Account, Version: "20250909_00",
		Arguments: map[string]any{"owner": "acme", "repo": "site", "title": "Broken link"},
	}, ex[0])

	// Empty arguments are the empty object; the default answer echoes them.
	res = call(t, tools[1], ``)
	require.False(t, res.IsError, res.Text)
	require.JSONEq(t, `{"echo":{}}`, res.Text)
	require.Empty(t, b.srv.Problems())
}

// TestAllowList: only the actions the agent allows are asked for and
// offered; an allowed action Composio does not offer is left out.
func TestAllowList(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.AddTools(githubTools()...)
	conn, _ := b.connect(t, b.caller, b.provider, "github", "gh")

	tools, err := b.tools.Tools(t.Context(), b.caller.WorkspaceID, refs(conn.ID, []string{"GITHUB_LIST_REPOSITORIES", "GITHUB_NOT_AN_ACTION"}))
	require.NoError(t, err)
	require.Len(t, tools, 1)
	require.Equal(t, "GITHUB_LIST_REPOSITORIES", tools[0].Def.Name)
	lists := b.srv.ToolLists()
	require.Len(t, lists, 1)
	require.Equal(t, "GITHUB_LIST_REPOSITORIES,GITHUB_NOT_AN_ACTION", lists[0].Get("tool_slugs"))
	require.Empty(t, b.srv.Problems())
}

// TestAtMostMaxActions: a large toolkit is cut at MaxActions, followed
// across pages, and the tools say so.
func TestAtMostMaxActions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var many []composiotest.Tool
	for i := range connectiontool.MaxActions + 6 {
		many = append(many, composiotest.Tool{Slug: fmt.Sprintf("GITHUB_ACTION_%03d", i), Toolkit: "github", Version: "1", Description: "An action."})
	}
	b.srv.AddTools(many...)
	conn, _ := b.connect(t, b.caller, b.provider, "github", "gh")

	tools, err := b.tools.Tools(t.Context(), b.caller.WorkspaceID, refs(conn.ID, nil))
	require.NoError(t, err)
	require.Len(t, tools, connectiontool.MaxActions)
	require.Equal(t, "GITHUB_ACTION_000", tools[0].Def.Name)
	require.Equal(t, fmt.Sprintf("GITHUB_ACTION_%03d", connectiontool.MaxActions-1), tools[connectiontool.MaxActions-1].Def.Name)
	for _, tl := range tools {
		require.Contains(t, tl.Def.Description, fmt.Sprintf("Only the first %d actions of this connection are offered.", connectiontool.MaxActions))
	}
}

// TestCache: discovery is reused until the TTL passes; another allow-list
// is another discovery.
func TestCache(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.AddTools(githubTools()...)
	conn, _ := b.connect(t, b.caller, b.provider, "github", "gh")
	get := func(acts []string) {
		t.Helper()
		_, err := b.tools.Tools(t.Context(), b.caller.WorkspaceID, refs(conn.ID, acts))
		require.NoError(t, err)
	}
	get(nil)
	get(nil)
	require.Len(t, b.srv.ToolLists(), 1)
	get([]string{"GITHUB_CREATE_AN_ISSUE"})
	require.Len(t, b.srv.ToolLists(), 2)
	b.clock.Advance(connectiontool.DefaultCacheTTL + time.Second)
	get(nil)
	require.Len(t, b.srv.ToolLists(), 3)
}

// TestTwoConnectionsOfOneToolkit: the tools of two GitHub connections get
// aliases, stay unique and each acts as its own account; a long slug still
// gives a valid name.
func TestTwoConnectionsOfOneToolkit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.AddTools(githubTools()...)
	long := "GITHUB_" + strings.Repeat("VERY_LONG_ACTION_NAME_", 4)
	b.srv.AddTools(composiotest.Tool{Slug: long, Toolkit: "github", Version: "20250909_00", Description: "Long."})
	b.srv.AddTools(composiotest.Tool{Slug: "GMAIL_SEND_EMAIL", Toolkit: "gmail", Version: "1", Description: "Sends an email."})
	work, workAccount := b.connect(t, b.caller, b.provider, "github", "work")
	home, homeAccount := b.connect(t, b.caller, b.provider, "github", "home")
	mail, _ := b.connect(t, b.caller, b.provider, "gmail", "mail")

	tools, err := b.tools.Tools(t.Context(), b.caller.WorkspaceID, refs(work.ID, nil, home.ID, nil, mail.ID, nil))
	require.NoError(t, err)
	require.Len(t, tools, 7)
	seen := map[string]bool{}
	for _, tl := range tools {
		require.Regexp(t, namePattern, tl.Def.Name)
		require.False(t, seen[tl.Def.Name], "duplicate %s", tl.Def.Name)
		seen[tl.Def.Name] = true
	}
	require.True(t, seen["c1_GITHUB_CREATE_AN_ISSUE"] && seen["c2_GITHUB_CREATE_AN_ISSUE"] && seen["GMAIL_SEND_EMAIL"], "%v", seen)

	call(t, byName(t, tools, "c2_GITHUB_CREATE_AN_ISSUE"), `{"owner":"me","repo":"dots","title":"t"}`)
	call(t, byName(t, tools, "c1_GITHUB_LIST_REPOSITORIES"), `{}`)
	ex := b.srv.Executions()
	require.Len(t, ex, 2)
	require.Equal(t, homeAccount, ex[0].ConnectedAccountID)
	require.Equal(t, workAccount, ex[1].ConnectedAccountID)

	var longTool string
	for name := range seen {
		if strings.HasPrefix(name, "c1_GITHUB_VERY_LONG") {
			longTool = name
		}
	}
	require.Len(t, longTool, 64)
	res := call(t, byName(t, tools, longTool), `{}`)
	require.False(t, res.IsError, res.Text)
	require.Equal(t, long, b.srv.Executions()[2].Slug)
}

// TestRefusedAtCallTime: a connection disabled, revoked or whose provider is
// disabled after its tools were offered refuses the next call as a tool
// error, without calling Composio; offering its tools again is refused.
func TestRefusedAtCallTime(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		change func(t *testing.T, b *bundle, c connection.Connection)
		code   string
		want   string
	}{
		{"connection disabled", func(t *testing.T, b *bundle, c connection.Connection) {
			off, star := false, "*"
			_, err := b.connections.Update(t.Context(), b.caller, connection.UpdateInput{ID: c.ID, IfMatch: &star, Enabled: &off})
			require.NoError(t, err)
		}, connectiontool.CodeDisabled, "the connection is disabled"},
		{"connection revoked", func(t *testing.T, b *bundle, c connection.Connection) {
			star := "*"
			_, err := b.connections.Revoke(t.Context(), b.caller, c.ID, &star)
			require.NoError(t, err)
		}, connectiontool.CodeUnauthorized, "the connection has no credential"},
		{"provider disabled", func(t *testing.T, b *bundle, _ connection.Connection) {
			off, star := false, "*"
			_, err := b.providers.Update(t.Context(), b.caller, catalog.KindConnector, provider.UpdateInput{ID: b.provider.ID, IfMatch: &star, Enabled: &off})
			require.NoError(t, err)
		}, connectiontool.CodeDisabled, "the connection's provider is disabled"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.srv.AddTools(githubTools()...)
			conn, _ := b.connect(t, b.caller, b.provider, "github", "gh")
			tools, err := b.tools.Tools(t.Context(), b.caller.WorkspaceID, refs(conn.ID, nil))
			require.NoError(t, err)

			tc.change(t, b, conn)
			res := call(t, tools[0], `{"owner":"a","repo":"b","title":"c"}`)
			require.True(t, res.IsError)
			require.Contains(t, res.Text, tc.want)
			require.Empty(t, b.srv.Executions())

			_, err = b.tools.Tools(t.Context(), b.caller.WorkspaceID, refs(conn.ID, nil))
			var ce *connectiontool.Error
			require.ErrorAs(t, err, &ce)
			require.Equal(t, tc.code, ce.Code)
			require.Equal(t, conn.ID, ce.ConnectionID)
			require.False(t, ce.Transient)
		})
	}
}

// TestReauthorizedAndRotatedKeyTakeEffect: a call uses the connection's
// current connected account and the provider's current key.
func TestReauthorizedAndRotatedKeyTakeEffect(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.AddTools(githubTools()...)
	conn, _ := b.connect(t, b.caller, b.provider, "github", "gh")
	tools, err := b.tools.Tools(t.Context(), b.caller.WorkspaceID, refs(conn.ID, nil))
	require.NoError(t, err)

	fresh := b.srv.AddAccount(*conn.Account, "github")
	star := "*"
	_, err = b.connections.Update(t.Context(), b.caller, connection.UpdateInput{ID: conn.ID, IfMatch: &star,
		Credential: secret.Set(map[string]any{"connected_account_id": fresh})})
	require.NoError(t, err)
	_, err = b.providers.Update(t.Context(), b.caller, catalog.KindConnector, provider.UpdateInput{ID: b.provider.ID, IfMatch: &star,
		Credential: provider.Set(map[string]any{"api_key": "sk-wrong-key"})})
	require.NoError(t, err)

	res := call(t, tools[1], `{}`)
	require.True(t, res.IsError)
	require.Equal(t, "GITHUB_LIST_REPOSITORIES failed: Composio refused the provider's API key (HTTP 401)", res.Text)

	_, err = b.providers.Update(t.Context(), b.caller, catalog.KindConnector, provider.UpdateInput{ID: b.provider.ID, IfMatch: &star,
		Credential: provider.Set(map[string]any{"api_key": testKey})})
	require.NoError(t, err)
	res = call(t, tools[1], `{}`)
	require.False(t, res.IsError, res.Text)
	ex := b.srv.Executions()
	require.Len(t, ex, 1)
	require.Equal(t, fresh, ex[0].ConnectedAccountID)
}

// TestWorkspaceIsolation: another workspace's connection is not found, and
// Composio is not called for it.
func TestWorkspaceIsolation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.AddTools(githubTools()...)
	other := b.otherWorkspace(t)
	theirs, _ := b.connect(t, other, b.composioProvider(t, other), "github", "theirs")

	_, err := b.tools.Tools(t.Context(), b.caller.WorkspaceID, refs(theirs.ID, nil))
	var ce *connectiontool.Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, connectiontool.CodeNotFound, ce.Code)
	require.Empty(t, b.srv.ToolLists())

	tools, err := b.tools.Tools(t.Context(), other.WorkspaceID, refs(theirs.ID, nil))
	require.NoError(t, err)
	require.Len(t, tools, 2)
}

// TestVendorFailures: Composio's refusals and failures, and the app's, are
// tool errors in our words (the app's message cleaned, bounded and without
// the key); none is a Go error.
func TestVendorFailures(t *testing.T) {
	t.Parallel()
	b := setup(t)
	gh := githubTools()
	gh = append(gh, composiotest.Tool{Slug: "GITHUB_LEAKY", Toolkit: "github", Version: "20250909_00",
		Run: func(map[string]any) (any, string) {
			return nil, "upstream said:\n\tkey " + testKey + " invalid " + strings.Repeat("x", 2000)
		}})
	gh = append(gh, composiotest.Tool{Slug: "GITHUB_HUGE", Toolkit: "github", Version: "20250909_00",
		Run: func(map[string]any) (any, string) {
			return map[string]any{"blob": strings.Repeat("é", connectiontool.MaxResultBytes)}, ""
		}})
	b.srv.AddTools(gh...)
	conn, account := b.connect(t, b.caller, b.provider, "github", "gh")
	tools, err := b.tools.Tools(t.Context(), b.caller.WorkspaceID, refs(conn.ID, nil))
	require.NoError(t, err)
	create, leaky, huge := byName(t, tools, "GITHUB_CREATE_AN_ISSUE"), byName(t, tools, "GITHUB_LEAKY"), byName(t, tools, "GITHUB_HUGE")

	res := call(t, create, `{"owner":"a","repo":"missing","title":"t"}`)
	require.True(t, res.IsError)
	require.Equal(t, "GITHUB_CREATE_AN_ISSUE failed: Not Found: the repository does not exist", res.Text)

	res = call(t, leaky, `{}`)
	require.True(t, res.IsError)
	noKey(t, res.Text)
	require.NotContains(t, res.Text, account)
	require.NotContains(t, res.Text, "\n")
	require.True(t, strings.HasPrefix(res.Text, "GITHUB_LEAKY failed: upstream said: key [redacted] invalid xxx"), res.Text)
	require.Less(t, len([]rune(res.Text)), 600)

	res = call(t, huge, `{}`)
	require.False(t, res.IsError)
	require.LessOrEqual(t, len(res.Text), connectiontool.MaxResultBytes+100)
	require.Contains(t, res.Text, "[truncated: the result has")

	for _, tc := range []struct {
		status int
		want   string
	}{
		{http.StatusUnauthorized, "Composio refused the provider's API key (HTTP 401)"},
		{http.StatusForbidden, "Composio refused the provider's API key (HTTP 403)"},
		{http.StatusTooManyRequests, "Composio is rate limiting the provider's API key (HTTP 429); try again later"},
		{http.StatusInternalServerError, "Composio answered HTTP 500, a server error; try again later"},
		{http.StatusBadGateway, "Composio answered HTTP 502, a server error; try again later"},
		{http.StatusBadRequest, "Composio refused the request (HTTP 400): Internal server error"},
	} {
		b.srv.FailNext(1, tc.status)
		res := call(t, create, `{"owner":"a","repo":"b","title":"c"}`)
		require.True(t, res.IsError)
		require.Equal(t, "GITHUB_CREATE_AN_ISSUE failed: "+tc.want, res.Text)
		noKey(t, res.Text)
	}

	// Arguments that are not one JSON object never reach Composio.
	res = call(t, byName(t, tools, "GITHUB_LIST_REPOSITORIES"), `[1,2]`)
	require.True(t, res.IsError)
	require.Equal(t, "invalid arguments: must be a JSON object", res.Text)
	res = call(t, byName(t, tools, "GITHUB_LIST_REPOSITORIES"), `{} {}`)
	require.True(t, res.IsError)
	require.Contains(t, res.Text, "trailing data")
	require.Len(t, b.srv.Executions(), 3, "only the app's own failures and the huge result reached the execute endpoint")
}

// TestListingFailures: Composio failing to list is an *Error, transient for
// a 5xx or 429 and not for a refused key, naming neither key nor URL.
func TestListingFailures(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.AddTools(githubTools()...)
	conn, _ := b.connect(t, b.caller, b.provider, "github", "gh")
	for _, tc := range []struct {
		status    int
		transient bool
	}{{500, true}, {429, true}, {401, false}} {
		b.srv.FailNext(1, tc.status)
		_, err := b.tools.Tools(t.Context(), b.caller.WorkspaceID, refs(conn.ID, nil))
		var ce *connectiontool.Error
		require.ErrorAs(t, err, &ce)
		require.Equal(t, connectiontool.CodeUnavailable, ce.Code)
		require.Equal(t, tc.transient, ce.Transient, tc.status)
		require.Contains(t, ce.Msg, fmt.Sprintf("HTTP %d", tc.status))
		noKey(t, err.Error())
		require.NotContains(t, err.Error(), b.srv.URL)
	}
	// Failures are not cached.
	tools, err := b.tools.Tools(t.Context(), b.caller.WorkspaceID, refs(conn.ID, nil))
	require.NoError(t, err)
	require.Len(t, tools, 2)
}

// TestCancelledContextIsAnError: only ctx's end is a Go error.
func TestCancelledContextIsAnError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.AddTools(githubTools()...)
	conn, _ := b.connect(t, b.caller, b.provider, "github", "gh")
	tools, err := b.tools.Tools(t.Context(), b.caller.WorkspaceID, refs(conn.ID, nil))
	require.NoError(t, err)
	_, err = tools[1].Call(ctxCancelled(), json.RawMessage(`{}`))
	require.Error(t, err)
	require.True(t, errors.Is(err, context.Canceled), err)
	require.Empty(t, b.srv.Executions())
}

// TestUnauthorizedConnection: a connection whose authorization has not
// completed offers no tools.
func TestUnauthorizedConnection(t *testing.T) {
	t.Parallel()
	b := setup(t)
	conn, err := b.connections.Create(t.Context(), b.caller, connection.CreateInput{
		ProviderID: b.provider.ID, App: "github", Name: "pending", Config: map[string]any{"auth_config_id": "ac_oauth"},
	})
	require.NoError(t, err)
	_, err = b.tools.Tools(t.Context(), b.caller.WorkspaceID, refs(conn.ID, nil))
	var ce *connectiontool.Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, connectiontool.CodeUnauthorized, ce.Code)
	require.Empty(t, b.srv.ToolLists())
}
