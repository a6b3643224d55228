package connection

import (
	"context"
	"errors"

	conn "github.com/svcdev/svc/internal/connection"
)

// target is a usable connection as it is now, with what calling Composio as
// its connected account needs (conn.RunTarget).
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

// load reads connection connectionID of workspaceID and its provider
// through the connection service, which checks that the connection may be
// used now; one that may not is an *Error.
func (t *Toolset) load(ctx context.Context, workspaceID, connectionID string) (target, error) {
	rt, err := t.d.Connections.TargetForRun(ctx, workspaceID, connectionID)
	if u, ok := errors.AsType[*conn.Unusable](err); ok {
		return target{}, &Error{ConnectionID: u.ConnectionID, Code: u.Code, Msg: u.Msg}
	}
	if err != nil {
		return target{}, err
	}
	return target{
		connectionID: rt.ConnectionID, name: rt.Name, app: rt.App, providerID: rt.ProviderID,
		baseURL: rt.BaseURL, key: rt.Key, accountID: rt.AccountID, userID: rt.UserID,
	}, nil
}
