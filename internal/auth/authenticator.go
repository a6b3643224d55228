package auth

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/dbx"
)

// CacheTTL bounds how long a looked-up key is trusted without asking the
// database again. It is the longest a disable, revoke or role change made by
// another process can take to apply; this process's own changes apply at once.
const CacheTTL = 2 * time.Second

// ErrUnauthenticated is the one answer for every kind of bad credential, so a
// client cannot tell an unknown key from a revoked one.
var ErrUnauthenticated = apperr.New(apperr.KindUnauthenticated, "missing or invalid API key")

// Authenticator resolves API keys to callers.
type Authenticator struct {
	pool *pgxpool.Pool
	q    *db.Queries
	log  *slog.Logger

	mu    sync.Mutex
	cache map[string]cacheEntry // by token hash
}

type cacheEntry struct {
	caller  *Caller // nil: refused
	expires time.Time
}

// NewAuthenticator returns an authenticator over the pool.
func NewAuthenticator(pool *pgxpool.Pool, log *slog.Logger) *Authenticator {
	return &Authenticator{pool: pool, q: db.New(), log: log, cache: map[string]cacheEntry{}}
}

// BearerToken extracts the token of an Authorization header value.
func BearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// Authenticate returns the caller a token stands for, or ErrUnauthenticated.
func (a *Authenticator) Authenticate(ctx context.Context, token string) (*Caller, error) {
	if !WellFormed(token) {
		return nil, ErrUnauthenticated
	}
	hash := HashToken(token)
	key := string(hash)
	now := time.Now()
	a.mu.Lock()
	e, ok := a.cache[key]
	a.mu.Unlock()
	if ok && now.Before(e.expires) {
		if e.caller == nil {
			return nil, ErrUnauthenticated
		}
		return e.caller, nil
	}

	row, err := a.q.APIKeyAuthenticate(ctx, a.pool, hash)
	if err != nil && !dbx.IsNotFound(err) {
		return nil, dbx.Translate(err, "api key")
	}
	var caller *Caller
	if err == nil {
		caller = callerOf(row)
		if caller != nil {
			a.touch(ctx, row)
		}
	}
	a.mu.Lock()
	if len(a.cache) > 100_000 {
		clear(a.cache) // bound memory under a flood of distinct keys
	}
	expires := now.Add(CacheTTL)
	if caller != nil && caller.KeyExpiresAt != nil && caller.KeyExpiresAt.Before(expires) {
		expires = *caller.KeyExpiresAt // never trust a key past its own expiry
	}
	a.cache[key] = cacheEntry{caller: caller, expires: expires}
	a.mu.Unlock()
	if caller == nil {
		return nil, ErrUnauthenticated
	}
	return caller, nil
}

// callerOf returns nil when the key must be refused.
func callerOf(r db.APIKeyAuthenticateRow) *Caller {
	if r.Revoked || r.Expired || r.UserDisabledAt != nil {
		return nil
	}
	role := EffectiveRole(r.Role, deref(r.WorkspaceRole), deref(r.OrganizationRole))
	if role == "" {
		return nil // the principal no longer belongs to the workspace
	}
	return &Caller{
		PrincipalID: r.PrincipalID, PrincipalKind: r.PrincipalKind, DisplayName: r.DisplayName,
		UserID: deref(r.UserID), Email: deref(r.UserEmail),
		OrganizationID: r.OrganizationID, OrganizationName: r.OrganizationName,
		WorkspaceID: r.WorkspaceID, WorkspaceName: r.WorkspaceName,
		Role: role, OrganizationRole: deref(r.OrganizationRole),
		KeyID: r.ID, KeyName: r.Name, KeyPrefix: r.Prefix, KeyRole: r.Role, KeyExpiresAt: r.ExpiresAt,
	}
}

// touch records the key's use, at most once a minute, without delaying the request.
func (a *Authenticator) touch(ctx context.Context, r db.APIKeyAuthenticateRow) {
	if r.LastUsedAt != nil && time.Since(*r.LastUsedAt) < time.Minute {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := a.q.APIKeyTouch(ctx, a.pool, r.ID); err != nil {
			a.log.Debug("record api key use", "key_id", r.ID, "error", err.Error())
		}
	}()
}

// Forget drops every cached key, so this process applies a disable, revoke or
// role change at once. Other processes apply it within CacheTTL.
func (a *Authenticator) Forget() {
	a.mu.Lock()
	clear(a.cache)
	a.mu.Unlock()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
