package connection

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/secret"
)

// Codes of Unusable: why a run cannot use a connection now.
const (
	// CodeNotFound: no such connection in the workspace.
	CodeNotFound = "not_found"
	// CodeDisabled: the connection or its provider is disabled.
	CodeDisabled = "disabled"
	// CodeUnauthorized: the connection has no credential (revoked, or its
	// authorization never completed).
	CodeUnauthorized = "unauthorized"
	// CodeInvalidConfiguration: the connection or its provider cannot be
	// used as configured (a credential that cannot be opened, a provider
	// type that offers no tools).
	CodeInvalidConfiguration = "invalid_configuration"
)

// Unusable is a connection a run cannot use now. Msg is safe to show: it
// never holds a credential or an address.
type Unusable struct {
	ConnectionID string
	Code         string
	Msg          string
}

func (u *Unusable) Error() string { return fmt.Sprintf("connection %s: %s", u.ConnectionID, u.Msg) }

// RunTarget is a usable connection as it is now, with what calling Composio
// as its connected account needs. Never put it in a view, a log or an error.
type RunTarget struct {
	ConnectionID string
	Name         string
	App          string
	ProviderID   string
	// BaseURL (without a trailing slash) and Key are the Composio
	// provider's.
	BaseURL string
	Key     string
	// AccountID is the connected account (ca_…); UserID the Composio user it
	// is filed under: the connection's account, else its id.
	AccountID string
	UserID    string
}

// TargetForRun reads connection connectionID of the workspace and its
// provider as they are now (one read, no lock: every call of a run's tools
// reads them again), and checks that a run may use the connection: it is
// enabled, so is its provider, it holds a credential naming a Composio
// connected account, and its provider is a Composio provider with a base URL
// and an API key. A connection that fails a check is *Unusable.
func (s *Service) TargetForRun(ctx context.Context, workspaceID, connectionID string) (RunTarget, error) {
	row, err := s.q.ConnectionToolTarget(ctx, s.pool, db.ConnectionToolTargetParams{WorkspaceID: workspaceID, ID: connectionID})
	if dbx.IsNotFound(err) {
		return RunTarget{}, &Unusable{ConnectionID: connectionID, Code: CodeNotFound, Msg: "no connection with this id in the workspace"}
	}
	if err != nil {
		return RunTarget{}, fmt.Errorf("read connection %s: %w", connectionID, err)
	}
	fail := func(code, msg string) (RunTarget, error) {
		return RunTarget{}, &Unusable{ConnectionID: connectionID, Code: code, Msg: msg}
	}
	switch {
	case row.ProviderKind != string(catalog.KindConnector):
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
	typ, ok := s.reg.Lookup(row.ProviderType)
	if !ok {
		return fail(CodeInvalidConfiguration, fmt.Sprintf("connector provider type %q is not installed", row.ProviderType))
	}
	cfg := typ.Config.Defaults()
	var stored map[string]any
	if len(row.ProviderConfig) > 0 {
		if err := json.Unmarshal(row.ProviderConfig, &stored); err != nil {
			return RunTarget{}, fmt.Errorf("provider %s: stored config: %w", row.ProviderID, err)
		}
	}
	maps.Copy(cfg, stored)
	var pcred, ccred map[string]any
	if err := secret.Open(s.ring, row.ProviderID, row.ProviderCredential, &pcred); err != nil {
		return fail(CodeInvalidConfiguration, "the provider's credential cannot be opened (its key is no longer in the key ring); set it again")
	}
	if err := secret.Open(s.ring, row.ID, row.Credential, &ccred); err != nil {
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
	return RunTarget{
		ConnectionID: row.ID, Name: row.Name, App: row.App, ProviderID: row.ProviderID,
		BaseURL: strings.TrimSuffix(base, "/"), Key: key, AccountID: account, UserID: user,
	}, nil
}
