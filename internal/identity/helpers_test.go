package identity_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/client"
	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apitest"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/testfactory"
)

// testBundle is a running process on a bootstrapped database.
type testBundle struct {
	h     *apitest.Harness
	admin testfactory.Admin
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	h := apitest.Start(t, apitest.Options{})
	return &testBundle{h: h, admin: testfactory.Bootstrap(t, h.App.Pool)}
}

// do sends a request with token as bearer key (none when empty); header holds
// name, value pairs. Every answer is checked against the contract.
func (b *testBundle) do(t *testing.T, token, method, path string, body any, header ...string) *http.Response {
	t.Helper()
	if token != "" {
		header = append(header, "Authorization", "Bearer "+token)
	}
	return b.h.Do(t, method, path, body, header...)
}

// send is a request safe to make from any goroutine: it reports failures with
// status 0 instead of stopping the test (the contract check still applies).
func (b *testBundle) send(method, path, body string, header ...string) int {
	req, err := http.NewRequest(method, b.h.URL+path, strings.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := b.h.HTTP.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// member adds a member to the bootstrapped workspace.
func (b *testBundle) member(t *testing.T, o testfactory.MemberOpts) testfactory.Member {
	t.Helper()
	return testfactory.AddMember(t, b.h.App.Pool, b.admin.OrganizationID, b.admin.WorkspaceID, o)
}

// exec runs a statement against the test database.
func (b *testBundle) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	_, err := b.h.App.Pool.Exec(context.Background(), sql, args...)
	require.NoError(t, err)
}

// count counts rows of a query.
func (b *testBundle) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.h.App.Pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

// foreign is a second organization in the same deployment, with a workspace
// whose owner holds an admin key.
type foreign struct {
	OrganizationID string
	WorkspaceID    string
	Owner          testfactory.Member
}

// otherOrganization inserts a second organization with one workspace, as a
// second tenant of the same deployment.
func (b *testBundle) otherOrganization(t *testing.T) foreign {
	t.Helper()
	ctx := context.Background()
	q := db.New()
	org, err := q.OrganizationInsert(ctx, b.h.App.Pool, db.OrganizationInsertParams{ID: id.New(id.Organization), Name: "Other"})
	require.NoError(t, err)
	creator, err := q.PrincipalInsert(ctx, b.h.App.Pool, db.PrincipalInsertParams{ID: id.New(id.Principal), Kind: "service", DisplayName: "creator"})
	require.NoError(t, err)
	ws, err := q.WorkspaceInsert(ctx, b.h.App.Pool, db.WorkspaceInsertParams{ID: id.New(id.Workspace), OrganizationID: org.ID, Name: "Other workspace", CreatedByID: creator.ID})
	require.NoError(t, err)
	owner := testfactory.AddMember(t, b.h.App.Pool, org.ID, ws.ID, testfactory.MemberOpts{OrganizationRole: auth.OrgOwner, WorkspaceRole: auth.RoleAdmin})
	return foreign{OrganizationID: org.ID, WorkspaceID: ws.ID, Owner: owner}
}

// lockWorkspace locks the workspace row from a connection of its own, as a
// concurrent writer would, until the returned release is called. Requests that
// change the workspace or its members queue behind it, so a test can release
// them all at once.
func (b *testBundle) lockWorkspace(t *testing.T, workspaceID string) (release func()) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, b.h.App.Pool.Config().ConnString())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(ctx) })
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "SELECT 1 FROM workspace WHERE id = $1 FOR NO KEY UPDATE", workspaceID)
	require.NoError(t, err)
	return func() { require.NoError(t, tx.Commit(ctx)) }
}

// waitLockWaiters waits until n sessions of the database wait for a lock.
func (b *testBundle) waitLockWaiters(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		waiting := b.count(t, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")
		if waiting == n {
			return
		}
		require.True(t, time.Now().Before(deadline), "%d of %d requests wait for the workspace lock", waiting, n)
		time.Sleep(10 * time.Millisecond)
	}
}

// decode reads a JSON body into T, failing the test on a status other than want.
func decode[T any](t *testing.T, resp *http.Response, want int) T {
	t.Helper()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, want, resp.StatusCode, "body: %s", body)
	var v T
	require.NoError(t, json.Unmarshal(body, &v), "body: %s", body)
	return v
}

// errorCode reads an error body's code, failing the test on a status other than want.
func errorCode(t *testing.T, resp *http.Response, want int) string {
	t.Helper()
	return string(decode[client.Error](t, resp, want).Error.Code)
}

// status reads and drops the body and returns the status.
func status(t *testing.T, resp *http.Response) int {
	t.Helper()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// events lists the workspace's audit trail (first page) with token.
func (b *testBundle) events(t *testing.T, token string) []client.AuditEvent {
	t.Helper()
	page := decode[client.AuditEventPage](t, b.do(t, token, http.MethodGet, "/api/v1/audit-events?limit=200", nil), http.StatusOK)
	return page.Items
}

// eventsOf keeps the events of one action.
func eventsOf(all []client.AuditEvent, action string) []client.AuditEvent {
	var out []client.AuditEvent
	for _, e := range all {
		if e.Action == action {
			out = append(out, e)
		}
	}
	return out
}
