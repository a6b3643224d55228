package httpapi

import (
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/objectstore"
	"github.com/svcdev/svc/internal/provider/types"
	"github.com/svcdev/svc/internal/refs"
)

// Deps are what the domain handlers are built from.
type Deps struct {
	Config  *config.Config
	Log     *slog.Logger
	Pool    *pgxpool.Pool
	Keyring *keyring.Ring
	Auth    *auth.Authenticator
	Redis   *redis.Client
	// ObjectStore keeps asset content.
	ObjectStore objectstore.Store
	// Types is the registry of installed provider types, compiled once per
	// process (its JSON Schemas) and shared by every handler that needs it.
	Types *types.Registry
	// References checks what agent and skill configurations name in other
	// domains (environment templates, memories, connections, assets); nil is
	// refs.None, which refuses every such reference as not found.
	References refs.External
	// ReplicaID names this process as the owner of the connection
	// authorizations it starts (the app's replica id).
	ReplicaID string
}
