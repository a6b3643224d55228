package idempotency

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/keyring"
)

const (
	// TTL is how long a completed record replays, from its creation.
	TTL = 24 * time.Hour
	// Lease is how long an in_progress record holds its key. Requests that can
	// carry the header answer in well under a second; a record older than this
	// belongs to a request lost with its process, and the key is free again.
	Lease = 5 * time.Minute

	// idPrefix names record ids; they are also the sealing context (aad).
	idPrefix = "idk"
	// claimAttempts bounds the retries when the holding record vanishes (its
	// request failed, or it expired) between the claim and the read.
	claimAttempts = 3
	// writeTimeout bounds storing or releasing a record after the handler ran;
	// these writes outlive a client that went away.
	writeTimeout = 5 * time.Second
)

// errMismatch answers a key reused with a different request.
func errMismatch() error {
	return apperr.New(apperr.KindConflict, "this Idempotency-Key was used with a different request")
}

// errInProgress answers a key whose first request is still running.
func errInProgress() error {
	return apperr.New(apperr.KindConflict, "a request with this Idempotency-Key is in progress")
}

// storedHeaders are the response headers a replay repeats.
var storedHeaders = []string{"Content-Type", "Location", "ETag"}

// scope identifies a key: whose, on which operation, and which key.
type scope struct {
	WorkspaceID string
	PrincipalID string
	Method      string
	Route       string
	KeyHash     []byte
}

// response is a stored response; its Header and Body are sealed at rest.
type response struct {
	Status int               `json:"-"`
	Header map[string]string `json:"header"`
	Body   []byte            `json:"body"`
}

// store reads and writes records.
type store struct {
	pool *pgxpool.Pool
	ring *keyring.Ring
	q    *db.Queries
}

// claim is the outcome of begin: the id of a record this request now holds,
// or the stored response of the first request.
type claim struct {
	ID     string
	Replay *response
}

// begin claims the key for a request with fingerprint fp, or returns the
// stored response to replay, or a 409 when the key is held by a different
// request or one still running.
func (s *store) begin(ctx context.Context, sc scope, fp []byte) (claim, error) {
	return s.beginWith(ctx, sc, fp, func(stored []byte, _ bool) (bool, error) {
		return subtle.ConstantTimeCompare(stored, fp) == 1, nil
	})
}

// beginWith is begin with the comparison of fingerprints left to match,
// which is told whether the live record is completed: a streamed request can
// only compute its fingerprint by reading its body, which it does only when
// there is a response to replay.
func (s *store) beginWith(ctx context.Context, sc scope, fp []byte, match func(stored []byte, completed bool) (bool, error)) (claim, error) {
	for range claimAttempts {
		rid, err := s.q.IdempotencyKeyClaim(ctx, s.pool, db.IdempotencyKeyClaimParams{
			ID: id.New(idPrefix), WorkspaceID: sc.WorkspaceID, PrincipalID: sc.PrincipalID,
			Method: sc.Method, Route: sc.Route, KeyHash: sc.KeyHash, Fingerprint: fp,
			LeaseSeconds: Lease.Seconds(),
		})
		if err == nil {
			return claim{ID: rid}, nil
		}
		if !dbx.IsNotFound(err) {
			return claim{}, fmt.Errorf("claim idempotency key: %w", dbx.Translate(err, ""))
		}
		row, err := s.q.IdempotencyKeyGetLive(ctx, s.pool, db.IdempotencyKeyGetLiveParams{
			WorkspaceID: sc.WorkspaceID, PrincipalID: sc.PrincipalID, Method: sc.Method, Route: sc.Route, KeyHash: sc.KeyHash,
		})
		if dbx.IsNotFound(err) {
			continue // released or expired in between: claim again
		}
		if err != nil {
			return claim{}, fmt.Errorf("read idempotency key: %w", dbx.Translate(err, ""))
		}
		completed := row.State == "completed" && row.Status != nil
		same, err := match(row.Fingerprint, completed)
		if err != nil {
			return claim{}, err
		}
		if !same {
			return claim{}, errMismatch()
		}
		if !completed {
			return claim{}, errInProgress()
		}
		resp, err := s.open(row.ID, int(*row.Status), row.Response)
		if err != nil {
			return claim{}, err
		}
		return claim{Replay: resp}, nil
	}
	// The key changed hands claimAttempts times in a row: requests are racing on it.
	return claim{}, errInProgress()
}

// complete stores the response of the request holding record rid, and fp
// as its fingerprint when not nil.
func (s *store) complete(ctx context.Context, rid string, r response, fp []byte) error {
	plain, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode idempotent response: %w", err)
	}
	sealed, err := s.ring.Seal(plain, []byte(rid))
	if err != nil {
		return fmt.Errorf("seal idempotent response: %w", err)
	}
	status := int32(r.Status)
	n, err := s.q.IdempotencyKeyComplete(ctx, s.pool, db.IdempotencyKeyCompleteParams{
		ID: rid, Status: &status, Response: sealed, TtlSeconds: TTL.Seconds(), Fingerprint: fp,
	})
	if err != nil {
		return fmt.Errorf("store idempotent response: %w", err)
	}
	if n == 0 {
		return errors.New("store idempotent response: the record is gone (its lease ran out)")
	}
	return nil
}

// release deletes the in_progress record rid, so that a retry runs again.
func (s *store) release(ctx context.Context, rid string) error {
	if _, err := s.q.IdempotencyKeyRelease(ctx, s.pool, rid); err != nil {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}

// open unseals a stored response.
func (s *store) open(rid string, status int, sealed []byte) (*response, error) {
	plain, err := s.ring.Open(sealed, []byte(rid))
	if err != nil {
		return nil, fmt.Errorf("open idempotent response %s: %w", rid, err)
	}
	r := &response{Status: status}
	if err := json.Unmarshal(plain, r); err != nil {
		return nil, fmt.Errorf("decode idempotent response %s: %w", rid, err)
	}
	return r, nil
}

// keyHash is how a client's key is stored: keys are the client's strings, so
// only their digest is kept, which also gives the index a fixed width.
func keyHash(key string) []byte {
	h := sha256.Sum256([]byte(key))
	return h[:]
}

// fingerprint identifies a request: method, path with its ids, query and body
// (strict JSON already, so the raw bytes are canonical enough: a client
// retrying sends the same bytes). Fields are NUL-separated; none contains NUL.
func fingerprint(r *http.Request, body []byte) []byte {
	h := sha256.New()
	for _, part := range []string{r.Method, r.URL.EscapedPath(), r.URL.RawQuery} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	h.Write(body)
	return h.Sum(nil)
}

// streamedFingerprint identifies a streamed request (an upload) by its
// method, path, query, Content-Type and the SHA-256 of its body, which is
// known only once the body was read; bodySum nil gives the fingerprint the
// record is claimed with until then, which no finished request has.
func streamedFingerprint(r *http.Request, bodySum []byte) []byte {
	h := sha256.New()
	for _, part := range []string{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Get("Content-Type")} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	if bodySum == nil {
		h.Write([]byte("streaming"))
	} else {
		h.Write([]byte{1})
		h.Write(bodySum)
	}
	return h.Sum(nil)
}
