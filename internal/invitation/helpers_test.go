package invitation_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/client"
	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apitest"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/testfactory"
)

// publicURL is the test process's server.public_url; the trailing slash must
// not double up in invitation URLs.
const publicURL = "https://svc.example.com/"

// ttlSeconds is the test process's auth.invitation_ttl_seconds.
const ttlSeconds = 3600

type testBundle struct {
	h     *apitest.Harness
	admin testfactory.Admin
	api   *client.ClientWithResponses // the admin's key: workspace admin and organization owner
	// tokens collects every token a test saw, to check the logs never show one.
	tokensMu sync.Mutex
	tokens   []string
}

// keepToken remembers the token of an invitation URL for the log check and returns it.
func (b *testBundle) keepToken(t *testing.T, invitationURL string) string {
	t.Helper()
	tok := tokenOf(t, invitationURL)
	b.tokensMu.Lock()
	b.tokens = append(b.tokens, tok)
	b.tokensMu.Unlock()
	return tok
}

// setup starts a process whose sweeps are paused: expire_credentials would
// delete the expired and revoked invitations the tests look at, at a random moment.
// Each test gets its own Redis key prefix, so rate limit buckets of parallel
// tests do not meet; configure adjusts the configuration further.
func setup(t *testing.T, configure ...func(*config.Config)) *testBundle {
	t.Helper()
	h := apitest.Start(t, apitest.Options{PauseSweeps: true, Configure: func(c *config.Config) {
		c.Server.PublicURL = publicURL
		c.Auth.InvitationTTLSeconds = ttlSeconds
		c.Redis.KeyPrefix = "svc-test-" + strings.ToLower(id.New("t")) + ":"
		for _, f := range configure {
			f(c)
		}
	}})
	b := &testBundle{h: h, admin: testfactory.Bootstrap(t, h.App.Pool)}
	b.api = h.Client(t, b.admin.APIKey)
	t.Cleanup(func() {
		logs := h.Logs.String()
		b.tokensMu.Lock()
		defer b.tokensMu.Unlock()
		for _, tok := range b.tokens {
			if strings.Contains(logs, tok) {
				t.Errorf("the logs contain an invitation token")
			}
		}
	})
	return b
}

// inviteWorkspace invites email to the admin's workspace and returns the
// response, which must be 201.
func (b *testBundle) inviteWorkspace(t *testing.T, email, role string) *client.CreatedInvitation {
	t.Helper()
	resp, err := b.api.CreateWorkspaceInvitationWithResponse(t.Context(), b.admin.WorkspaceID, nil,
		client.CreateInvitationRequest{Email: email, Role: role})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, resp.StatusCode(), string(resp.Body))
	b.keepToken(t, resp.JSON201.InvitationUrl)
	return resp.JSON201
}

// inviteOrganization invites email to the admin's organization (201).
func (b *testBundle) inviteOrganization(t *testing.T, email, role string) *client.CreatedInvitation {
	t.Helper()
	resp, err := b.api.CreateOrganizationInvitationWithResponse(t.Context(), b.admin.OrganizationID, nil,
		client.CreateInvitationRequest{Email: email, Role: role})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, resp.StatusCode(), string(resp.Body))
	b.keepToken(t, resp.JSON201.InvitationUrl)
	return resp.JSON201
}

// accept accepts with token and returns the status and body.
func (b *testBundle) accept(t *testing.T, body client.AcceptInvitationRequest) *client.AcceptInvitationResponse {
	t.Helper()
	resp, err := b.h.API.AcceptInvitationWithResponse(t.Context(), body)
	require.NoError(t, err)
	return resp
}

func (b *testBundle) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	_, err := b.h.App.Pool.Exec(t.Context(), sql, args...)
	require.NoError(t, err)
}

// expire back-dates an invitation past its expiry.
func (b *testBundle) expire(t *testing.T, invitationID string) {
	t.Helper()
	b.exec(t, "UPDATE invitation SET expires_at = now() - interval '1 second' WHERE id = $1", invitationID)
}

// tenant is another organization with a workspace and its owner's admin key.
type tenant struct {
	OrganizationID string
	WorkspaceID    string
	Admin          testfactory.Member
}

// otherTenant makes a second organization, unrelated to the admin's.
func (b *testBundle) otherTenant(t *testing.T) tenant {
	t.Helper()
	ctx, pool, q := t.Context(), b.h.App.Pool, db.New()
	org, err := q.OrganizationInsert(ctx, pool, db.OrganizationInsertParams{ID: id.New(id.Organization), Name: "Other organization"})
	require.NoError(t, err)
	ws := b.workspace(t, org.ID)
	m := testfactory.AddMember(t, pool, org.ID, ws, testfactory.MemberOpts{WorkspaceRole: "admin", OrganizationRole: "owner"})
	return tenant{OrganizationID: org.ID, WorkspaceID: ws, Admin: m}
}

// workspace adds a workspace to an organization.
func (b *testBundle) workspace(t *testing.T, organizationID string) string {
	t.Helper()
	ws, err := db.New().WorkspaceInsert(t.Context(), b.h.App.Pool, db.WorkspaceInsertParams{
		ID: id.New(id.Workspace), OrganizationID: organizationID, Name: "Another workspace", CreatedByID: b.admin.PrincipalID,
	})
	require.NoError(t, err)
	return ws.ID
}

// apiError is the documented error body.
type apiError struct {
	Code    string
	Message string
	Fields  []string
}

func decodeError(t *testing.T, body []byte) apiError {
	t.Helper()
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Details []struct {
				Field string `json:"field"`
			} `json:"details"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(body, &e), string(body))
	out := apiError{Code: e.Error.Code, Message: e.Error.Message}
	for _, d := range e.Error.Details {
		out.Fields = append(out.Fields, d.Field)
	}
	return out
}

// readError reads an error response of h.Do.
func readError(t *testing.T, resp *http.Response) apiError {
	t.Helper()
	var raw json.RawMessage
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&raw))
	return decodeError(t, raw)
}

// tokenOf extracts the token from an invitation URL.
func tokenOf(t *testing.T, invitationURL string) string {
	t.Helper()
	u, err := url.Parse(invitationURL)
	require.NoError(t, err)
	tok := u.Query().Get("token")
	require.NotEmpty(t, tok)
	return tok
}

func ptr[T any](v T) *T { return &v }
