package contool

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"strings"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/provider/types"
	"github.com/svcdev/svc/internal/secret"
)

// composioIDPattern is the shape of Composio's ids (ca_…).
var composioIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// target is a usable connection as it is now, with what calling Composio as
// its connected account needs.
type target struct {
	connectionID string
	name         string
	app          string
	providerID   string
	baseURL      string
	key          string
	// accountID is the connected account (ca_…); userID the Composio user it
	// is filed under: the connection's account, else its id.
	accountID string
	userID    string
}

// load reads connection connectionID of workspaceID and its provider, and
// checks that the connection may be used now.
func (t *Toolset) load(ctx context.Context, workspaceID, connectionID string) (target, error) {
	row, err := t.q.ConnectionToolTarget(ctx, t.d.Pool, db.ConnectionToolTargetParams{WorkspaceID: workspaceID, ID: connectionID})
	if dbx.IsNotFound(err) {
		return target{}, &Error{ConnectionID: connectionID, Code: CodeNotFound, Msg: "no connection with this id in the workspace"}
	}
	if err != nil {
		return target{}, fmt.Errorf("read connection %s: %w", connectionID, err)
	}
	fail := func(code, msg string) (target, error) {
		return target{}, &Error{ConnectionID: connectionID, Code: code, Msg: msg}
	}
	switch {
	case row.ProviderKind != string(types.KindConnector):
		return fail(CodeNotFound, "the connection's provider is not a connector provider of the workspace")
	case !row.Enabled:
		return fail(CodeDisabled, "the connection is disabled")
	case !row.ProviderEnabled:
		return fail(CodeDisabled, "the connection's provider is disabled")
	case row.Credential == nil:
		return fail(CodeUnauthorized, "the connection has no credential: it was revoked, or its authorization has not completed")
	case row.ProviderType != "composio":
		return fail(CodeInvalidConfiguration, fmt.Sprintf("connections of provider type %q offer no tools", row.ProviderType))
	}
	typ, ok := t.d.Types.Lookup(row.ProviderType)
	if !ok {
		return fail(CodeInvalidConfiguration, fmt.Sprintf("connector provider type %q is not installed", row.ProviderType))
	}
	cfg := typ.Config.Defaults()
	var stored map[string]any
	if len(row.ProviderConfig) > 0 {
		if err := json.Unmarshal(row.ProviderConfig, &stored); err != nil {
			return target{}, fmt.Errorf("provider %s: stored config: %w", row.ProviderID, err)
		}
	}
	maps.Copy(cfg, stored)
	var pcred, ccred map[string]any
	if err := secret.Open(t.d.Keyring, row.ProviderID, row.ProviderCredential, &pcred); err != nil {
		return fail(CodeInvalidConfiguration, "the provider's credential cannot be opened (its key is no longer in the key ring); set it again")
	}
	if err := secret.Open(t.d.Keyring, row.ID, row.Credential, &ccred); err != nil {
		return fail(CodeInvalidConfiguration, "the connection's credential cannot be opened (its key is no longer in the key ring); authorize it again")
	}
	base, _ := cfg["base_url"].(string)
	key, _ := pcred["api_key"].(string)
	account, _ := ccred["connected_account_id"].(string)
	switch {
	case base == "" || key == "":
		return fail(CodeInvalidConfiguration, "the Composio provider has no base URL or no API key")
	case !composioIDPattern.MatchString(account):
		return fail(CodeInvalidConfiguration, "the connection's credential names no Composio connected account")
	}
	user := row.ID
	if row.Account != nil {
		user = *row.Account
	}
	return target{
		connectionID: row.ID, name: row.Name, app: row.App, providerID: row.ProviderID,
		baseURL: strings.TrimSuffix(base, "/"), key: key, accountID: account, userID: user,
	}, nil
}
