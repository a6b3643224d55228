package main

import (
	"context"
	"encoding/json"
	"io"
	"mime/quotedprintable"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/testdb"
)

// createdOrganization is what `organization create` prints on stdout.
type createdOrganization struct {
	OrganizationID string `json:"organization_id"`
	Name           string `json:"name"`
	WorkspaceID    string `json:"workspace_id"`
	Owner          struct {
		Email    string  `json:"email"`
		UserID   *string `json:"user_id"`
		Status   string  `json:"status"`
		Disabled bool    `json:"disabled"`
	} `json:"owner"`
	Invitation *struct {
		ID        string    `json:"id"`
		URL       string    `json:"url"`
		ExpiresAt time.Time `json:"expires_at"`
	} `json:"invitation"`
}

// listedOrganization is one item of `organization list --json`.
type listedOrganization struct {
	ID            string    `json:"id"`
	Name          string    `json:"name"`
	Workspaces    int       `json:"workspaces"`
	Owners        []string  `json:"owners"`
	InvitedOwners []string  `json:"invited_owners"`
	CreatedAt     time.Time `json:"created_at"`
}

// TestOrganizationCreateAndList: an operator creates organizations for an
// address with an account (a member at once) and for one without (invited,
// with the URL printed and the mail sent by a control process through the
// configured transport), lists them as a table and as JSON, and gets exit 3
// for a name that exists, 1 for invalid input and 2 for usage errors, with
// nothing changed.
func TestOrganizationCreateAndList(t *testing.T) {
	t.Parallel()
	url := testdb.NewURL(t)
	keyFile := newKeyRing(t)
	rep, _ := bootstrap(t, url)
	vars := dbVars(url)
	vars["SVC_ENCRYPTION__KEY_FILE"] = keyFile
	vars["SVC_SERVER__PUBLIC_URL"] = "https://agents.example.com"

	create := func(args ...string) (createdOrganization, result) {
		t.Helper()
		r := runSvc(t, vars, append([]string{"organization", "create"}, args...)...)
		require.Equal(t, 0, r.code, "%s", r)
		var out createdOrganization
		decodeOne(t, r, &out)
		return out, r
	}

	// An address with an account owns the organization and administers its
	// workspace at once.
	acme, r := create("--name", "Acme", "--owner-email", "OPS@example.com")
	require.Regexp(t, `^org_[0-9a-z]{26}$`, acme.OrganizationID)
	require.Regexp(t, `^ws_[0-9a-z]{26}$`, acme.WorkspaceID)
	require.Equal(t, "Acme", acme.Name)
	require.Equal(t, "member", acme.Owner.Status)
	require.Equal(t, opsEmail, acme.Owner.Email)
	require.Equal(t, &rep.UserID, acme.Owner.UserID)
	require.Nil(t, acme.Invitation)
	require.Contains(t, r.stderr, `organization "Acme" is created`)
	conn := connect(t, url)
	var orgRole, wsRole, wsName string
	require.NoError(t, conn.QueryRow(context.Background(), `SELECT m.role FROM organization_member m WHERE m.organization_id = $1 AND m.principal_id = $2`,
		acme.OrganizationID, rep.PrincipalID).Scan(&orgRole))
	require.NoError(t, conn.QueryRow(context.Background(), `SELECT m.role, w.name FROM workspace_member m JOIN workspace w ON w.id = m.workspace_id
		WHERE m.workspace_id = $1 AND m.principal_id = $2`, acme.WorkspaceID, rep.PrincipalID).Scan(&wsRole, &wsName))
	require.Equal(t, []string{"owner", "admin", "Default workspace"}, []string{orgRole, wsRole, wsName})

	// An address without one is invited to own it; the URL is printed once.
	globex, r := create("--name", "Globex", "--owner-email", "hank@globex.example", "--workspace", "Research")
	require.Equal(t, "invited", globex.Owner.Status)
	require.Nil(t, globex.Owner.UserID)
	require.NotNil(t, globex.Invitation)
	require.Regexp(t, `^https://agents\.example\.com/invitations/accept\?token=[A-Za-z0-9_-]{43}$`, globex.Invitation.URL)
	require.WithinDuration(t, time.Now().Add(7*24*time.Hour), globex.Invitation.ExpiresAt, time.Hour)
	require.Contains(t, r.stderr, "hank@globex.example has no account")
	require.Contains(t, r.stderr, `mail.transport "log"`)
	var invRole, invitedBy string
	require.NoError(t, conn.QueryRow(context.Background(), `SELECT i.role, p.display_name FROM invitation i JOIN principal p ON p.id = i.invited_by_id
		WHERE i.id = $1 AND i.organization_id = $2 AND i.workspace_id IS NULL`, globex.Invitation.ID, globex.OrganizationID).Scan(&invRole, &invitedBy))
	require.Equal(t, []string{"owner", "svc operator"}, []string{invRole, invitedBy})

	// A control process sends the queued invitation mail through the
	// configured transport, link included.
	mailDir := filepath.Join(t.TempDir(), "mail")
	runVars := runVars(t, url, keyFile)
	runVars["SVC_MAIL__TRANSPORT"], runVars["SVC_MAIL__FILE_DIR"] = "file", mailDir
	runVars["SVC_OBJECT_STORE__URL"] = "file://" + t.TempDir()
	p := startSvc(t, runVars, "run", "--role", "control")
	p.waitReady()
	var mail string
	require.Eventually(t, func() bool {
		files, _ := filepath.Glob(filepath.Join(mailDir, "*.eml"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err == nil && strings.Contains(string(b), "hank@globex.example") {
				mail = string(b)
				return true
			}
		}
		return false
	}, 20*time.Second, 50*time.Millisecond, "the invitation mail is written to %s", mailDir)
	decoded, err := readQuotedPrintable(mail)
	require.NoError(t, err)
	require.Contains(t, decoded, globex.Invitation.URL)
	require.Contains(t, decoded, "Globex")

	// A name that exists, whatever its case: exit 3, nothing changed.
	before := identityCounts(t, url)
	r = runSvc(t, vars, "organization", "create", "--name", "  acme ", "--owner-email", "other@example.com")
	require.Equal(t, 3, r.code, "%s", r)
	require.Empty(t, r.stdout)
	require.Contains(t, r.stderr, `"acme": an organization of that name exists; nothing was changed`)
	// Invalid input: exit 1, nothing changed.
	for _, args := range [][]string{
		{"--name", "Initech", "--owner-email", "not-an-address"},
		{"--name", "", "--owner-email", "peter@initech.example"},
		{"--name", "Initech", "--owner-email", "peter@initech.example", "--workspace", strings.Repeat("w", 201)},
	} {
		r := runSvc(t, vars, append([]string{"organization", "create"}, args...)...)
		require.Equal(t, 1, r.code, "%s", r)
		require.Empty(t, r.stdout)
		require.Contains(t, r.stderr, "organization create: invalid ", "%s", r)
	}
	// Usage errors: exit 2.
	for _, args := range [][]string{
		{"organization"}, {"organization", "bogus"}, {"organization", "create", "--name", "Initech"},
		{"organization", "create", "--owner-email", "peter@initech.example"}, {"organization", "list", "extra"},
	} {
		r := runSvc(t, vars, args...)
		require.Equal(t, 2, r.code, "%s", r)
		require.Empty(t, r.stdout)
	}
	require.Equal(t, before, identityCounts(t, url), "refused commands change nothing")

	// The list, as JSON and as a table.
	r = runSvc(t, vars, "organization", "list", "--json")
	require.Equal(t, 0, r.code, "%s", r)
	var listed []listedOrganization
	decodeOne(t, r, &listed)
	require.Len(t, listed, 3)
	for i, want := range []listedOrganization{
		{ID: rep.OrganizationID, Name: "Default organization", Workspaces: 1, Owners: []string{opsEmail}, InvitedOwners: []string{}},
		{ID: acme.OrganizationID, Name: "Acme", Workspaces: 1, Owners: []string{opsEmail}, InvitedOwners: []string{}},
		{ID: globex.OrganizationID, Name: "Globex", Workspaces: 1, Owners: []string{}, InvitedOwners: []string{"hank@globex.example"}},
	} {
		want.CreatedAt = listed[i].CreatedAt
		require.Equal(t, want, listed[i])
		require.WithinDuration(t, time.Now(), listed[i].CreatedAt, time.Minute)
	}
	r = runSvc(t, vars, "organization", "list")
	require.Equal(t, 0, r.code, "%s", r)
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	require.Len(t, lines, 4, "%s", r)
	require.Equal(t, []string{"ID", "NAME", "WORKSPACES", "OWNERS", "CREATED"}, strings.Fields(lines[0]))
	require.Contains(t, lines[2], acme.OrganizationID)
	require.Contains(t, lines[2], "Acme")
	require.Contains(t, lines[3], "hank@globex.example (invited)")
	require.Contains(t, lines[3], time.Now().UTC().Format(time.DateOnly))
}

// TestOrganizationListEmptyAndWithoutKeyRing: an empty service lists nothing
// (an empty JSON list); creating an organization whose owner would be invited
// needs the key ring, and says which key, changing nothing.
func TestOrganizationListEmptyAndWithoutKeyRing(t *testing.T) {
	t.Parallel()
	url := testdb.NewURL(t)
	r := runSvc(t, dbVars(url), "organization", "list", "--json")
	require.Equal(t, 0, r.code, "%s", r)
	require.Equal(t, "[]\n", r.stdout)
	r = runSvc(t, dbVars(url), "organization", "list")
	require.Equal(t, 0, r.code, "%s", r)
	require.Empty(t, r.stdout)
	require.Contains(t, r.stderr, "no organizations yet")

	r = runSvc(t, dbVars(url), "organization", "create", "--name", "Acme", "--owner-email", "new@example.com")
	require.Equal(t, 1, r.code, "%s", r)
	require.Empty(t, r.stdout)
	require.Contains(t, r.stderr, "encryption.key_file")
	require.Zero(t, identityCounts(t, url)["organization"])
}

// readQuotedPrintable decodes a mail's quoted-printable text (soft line
// breaks would cut a long link).
func readQuotedPrintable(mail string) (string, error) {
	b, err := io.ReadAll(quotedprintable.NewReader(strings.NewReader(mail)))
	return string(b), err
}

// TestKeyringGenerateMakesParents: generate creates the missing directories
// of --out with mode 0700 and leaves existing ones as they are.
func TestKeyringGenerateMakesParents(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	require.NoError(t, os.Chmod(root, 0o755))
	out := filepath.Join(root, "etc", "svc", "keyring.json")
	r := runSvc(t, nil, "keyring", "generate", "--out", out)
	require.Equal(t, 0, r.code, "%s", r)
	for _, dir := range []string{filepath.Join(root, "etc"), filepath.Join(root, "etc", "svc")} {
		info, err := os.Stat(dir)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o700), info.Mode().Perm(), dir)
		require.Contains(t, r.stderr, "created the directory "+dir+" (mode 0700)")
	}
	info, err := os.Stat(root)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), info.Mode().Perm(), "an existing directory keeps its mode")
	info, err = os.Stat(out)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	var report map[string]string
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &report))
	require.Equal(t, out, report["key_file"])
}
