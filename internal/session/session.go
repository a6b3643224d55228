// Package session signs people in to the web console: login sessions created
// by e-mail and password, and links sent by mail (password reset).
//
// Session and mail link tokens carry 256 random bits and are stored only as
// their SHA-256, like API keys; every expiry is computed and compared with the
// database clock. A session is checked against the database on every use, so
// signing out, an expiry or an operator's `user disable` applies at once.
// Sign-in attempts are rate limited per account and per client address.
package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/password"
	"github.com/svcdev/svc/internal/ratelimit"
)

// Errors of the session operations.
var (
	// ErrBadCredentials is the one answer to an unknown address, a wrong
	// password, a disabled account and an account without a password, so a
	// client cannot tell which it was.
	ErrBadCredentials = apperr.New(apperr.KindUnauthenticated, "the e-mail address or the password is wrong")
	// ErrNoSession: the token is not a live session (unknown, expired, revoked,
	// or its user is disabled).
	ErrNoSession = apperr.New(apperr.KindUnauthenticated, "not signed in")
	// ErrLinkUnknown: a mailed link's token is missing, malformed or unknown.
	ErrLinkUnknown = apperr.New(apperr.KindInvalidArgument, "this link is not valid")
	// ErrLinkSpent: a mailed link was used, revoked or has expired, or its
	// account was disabled.
	ErrLinkSpent = apperr.New(apperr.KindConflict, "this link has expired or has already been used")
)

// rateWindow is the window of the sign-in limits.
const rateWindow = time.Minute

// Options are what a Service is built from.
type Options struct {
	Pool    *pgxpool.Pool
	Keyring *keyring.Ring
	Limiter *ratelimit.Limiter // nil: no rate limits
	Log     *slog.Logger
	// PublicURL is server.public_url; mailed links point at its pages.
	PublicURL string
	// SessionTTL is auth.session_ttl_seconds; MailLinkTTL auth.mail_link_ttl_seconds.
	SessionTTL  time.Duration
	MailLinkTTL time.Duration
	// Attempts per minute: per e-mail address from one client address
	// (limits.sign_in_per_account_per_client_per_minute), per e-mail address
	// from all clients (limits.sign_in_per_account_per_minute) and per client
	// address (limits.sign_in_per_address_per_minute). They bound password
	// reset requests too, in buckets of their own.
	PerAccountPerClientPerMinute int
	PerAccountPerMinute          int
	PerAddressPerMinute          int
}

// Service manages login sessions and mail links. It owns its transactions.
type Service struct {
	o Options
	q *db.Queries
	// verify checks a password against a stored hash; every sign-in calls it
	// exactly once, whatever the address, so refusals cost the same work.
	verify func(pw, hash string) (bool, error)
}

// NewService returns a service over o.
func NewService(o Options) (*Service, error) {
	switch {
	case o.Pool == nil:
		return nil, errors.New("session: a database pool is required")
	case o.Keyring == nil:
		return nil, errors.New("session: a key ring is required")
	case o.Log == nil:
		return nil, errors.New("session: a logger is required")
	case o.PublicURL == "":
		return nil, errors.New("session: the public URL is required")
	case o.SessionTTL < time.Second || o.MailLinkTTL < time.Second:
		return nil, errors.New("session: the session and mail link TTLs must be at least a second")
	}
	o.PublicURL = strings.TrimRight(o.PublicURL, "/")
	return &Service{o: o, q: db.New(), verify: password.Verify}, nil
}

// Session is a live login session and who it belongs to.
type Session struct {
	ID          string
	UserID      string
	PrincipalID string
	Email       string
	DisplayName string
	ExpiresAt   time.Time
}

// SignInInput is a sign-in attempt. ClientAddr is the client's address as the
// rate limit counts it; PreviousToken, if set, is the browser's current session,
// which the new one replaces.
type SignInInput struct {
	Email         string
	Password      string
	ClientAddr    string
	PreviousToken string
}

// Validate checks that both fields are there; anything else is judged by
// comparing with the account.
func (in SignInInput) Validate() error {
	var details []apperr.Detail
	if strings.TrimSpace(in.Email) == "" {
		details = append(details, apperr.Detail{Field: "email", Reason: "required"})
	}
	if in.Password == "" {
		details = append(details, apperr.Detail{Field: "password", Reason: "required"})
	}
	if details != nil {
		return apperr.InvalidArgument("enter your e-mail address and your password", details...)
	}
	return nil
}

// Created is a new session; Token goes into the cookie and is not kept.
type Created struct {
	Token     string
	ExpiresAt time.Time
}

// SignIn checks an e-mail address and password and opens a session. Every
// refusal is ErrBadCredentials and costs one argon2id verification, so neither
// the answer nor its timing tells whether the address has an account. Over the
// rate limits it refuses with rate_limited before looking at anything.
func (s *Service) SignIn(ctx context.Context, in SignInInput) (Created, error) {
	if err := in.Validate(); err != nil {
		return Created{}, err
	}
	email := strings.TrimSpace(in.Email)
	if err := s.limit(ctx, "sign_in", email, in.ClientAddr); err != nil {
		return Created{}, err
	}
	user, err := s.q.UserGetByEmail(ctx, s.o.Pool, email)
	found := err == nil
	if err != nil && !dbx.IsNotFound(err) {
		return Created{}, dbx.Translate(err, "user")
	}
	hash := dummyHash
	if found && user.PasswordHash != nil {
		hash = *user.PasswordHash
	}
	match, verr := false, error(nil)
	if len(in.Password) <= password.MaxLength {
		match, verr = s.verify(in.Password, hash)
	} else {
		_, _ = s.verify("", dummyHash) // same cost for an oversized password
	}
	if verr != nil {
		s.o.Log.Warn("stored password hash cannot be verified", "user_id", user.ID, "error", verr.Error())
	}
	if !match || !found || user.PasswordHash == nil || user.DisabledAt != nil {
		return Created{}, ErrBadCredentials
	}
	token, tokenHash, err := newSecret()
	if err != nil {
		return Created{}, err
	}
	return dbx.WithTxV(ctx, s.o.Pool, func(ctx context.Context, tx pgx.Tx) (Created, error) {
		if WellFormed(in.PreviousToken) {
			if err := s.q.LoginSessionRevokeByHash(ctx, tx, hashSecret(in.PreviousToken)); err != nil {
				return Created{}, err
			}
		}
		row, err := s.q.LoginSessionInsert(ctx, tx, db.LoginSessionInsertParams{
			ID: id.New(id.Session), UserID: user.ID, TokenHash: tokenHash, TtlSeconds: seconds(s.o.SessionTTL),
		})
		if err != nil {
			return Created{}, err
		}
		return Created{Token: token, ExpiresAt: row.ExpiresAt}, nil
	})
}

// limit counts an attempt of kind (sign_in, password_reset) against the
// client's address, the account from that client, and the account from all
// clients, refusing with rate_limited when one is over its limit. The account
// from one client has a low limit and the account as a whole a much higher one:
// a client that keeps failing is stopped early without locking the owner out
// from another client, and a guess spread over many clients still meets the
// ceiling.
func (s *Service) limit(ctx context.Context, kind, email, clientAddr string) error {
	// The account's buckets are named by a hash: Redis keys carry no addresses.
	sum := sha256.Sum256([]byte(strings.ToLower(email)))
	account := kind + ":account:" + hex.EncodeToString(sum[:16])
	type check struct {
		bucket string
		limit  int
	}
	// The narrowest buckets come first, so that a refused client does not also
	// use up the account's shared ceiling.
	var checks []check
	if clientAddr != "" {
		checks = append(checks,
			check{kind + ":address:" + clientAddr, s.o.PerAddressPerMinute},
			check{account + ":client:" + clientAddr, s.o.PerAccountPerClientPerMinute})
	}
	checks = append(checks, check{account, s.o.PerAccountPerMinute})
	for _, c := range checks {
		if d := s.o.Limiter.Allow(ctx, c.bucket, c.limit, rateWindow); !d.Allowed {
			return apperr.RateLimited("too many attempts; wait a moment and try again", d.RetryAfter)
		}
	}
	return nil
}

// Resolve returns the live session of a token, or ErrNoSession. It asks the
// database every time: console traffic is light, and a revocation or a
// disabled account must apply at once.
func (s *Service) Resolve(ctx context.Context, token string) (Session, error) {
	if !WellFormed(token) {
		return Session{}, ErrNoSession
	}
	row, err := s.q.LoginSessionResolve(ctx, s.o.Pool, hashSecret(token))
	if dbx.IsNotFound(err) {
		return Session{}, ErrNoSession
	}
	if err != nil {
		return Session{}, dbx.Translate(err, "session")
	}
	if row.LastSeenAt == nil || time.Since(*row.LastSeenAt) > time.Minute {
		if err := s.q.LoginSessionTouch(ctx, s.o.Pool, row.ID); err != nil {
			s.o.Log.Debug("record session use", "session_id", row.ID, "error", err.Error())
		}
	}
	return Session{
		ID: row.ID, UserID: row.UserID, PrincipalID: row.PrincipalID,
		Email: row.Email, DisplayName: row.DisplayName, ExpiresAt: row.ExpiresAt,
	}, nil
}

// SignOut revokes the session of a token; unknown and spent tokens are no error.
func (s *Service) SignOut(ctx context.Context, token string) error {
	if !WellFormed(token) {
		return nil
	}
	if err := s.q.LoginSessionRevokeByHash(ctx, s.o.Pool, hashSecret(token)); err != nil {
		return dbx.Translate(err, "session")
	}
	return nil
}

// seconds converts a TTL for the database, which computes the expiry itself.
func seconds(d time.Duration) int32 {
	return int32(min(d/time.Second, 1<<31-1))
}

// dummyHash is what sign-in verifies against when the address has no account
// (or no password), so that refusal costs the same time as a wrong password.
// TestDummyHashMatchesParameters keeps it in step with password.Hash.
const dummyHash = password.Unusable
