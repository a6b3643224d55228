package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/outbox"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/provider/probe"
	"github.com/svcdev/svc/internal/secret"
)

// maxPurgeAnswer bounds the part of a vendor's answer a purge reads.
const maxPurgeAnswer = 64 << 10

// Purger delivers memory_namespace_purge: it deletes a deleted record
// memory's namespace, with every record in it, at the memory provider the
// memory was on (docs/decisions/0024-namespace-purge-and-checkpoint-cleanup.md).
//
// The request is the vendor's namespace delete (catalog.Type.NamespaceDelete),
// built as the provider test builds its request (probe.VendorRequest: the
// type's base URL, version headers and credential header) from the provider's
// current config and opened credential, and sent through the endpoint policy
// within the time-out. A disabled provider is purged too: deleting a deleted
// memory's data is cleanup, not new use.
//
// Outcomes: 2xx, or a 404 that is the vendor's JSON error (the namespace does
// not exist: purged already, or never written), is delivered, so a repeated
// delivery is harmless. A refused credential, rate limiting, a server error,
// a time-out or an unreadable stored credential fail and are retried, since an
// operator or time can mend them. A payload that is not a purge of a memory's
// namespace, a memory that still exists, and a provider that is gone or not a
// memory provider are permanent. Error texts are fixed: they never carry the
// credential, an address or the vendor's answer, and no answer is kept.
type Purger struct {
	pool    *pgxpool.Pool
	q       *db.Queries
	ring    *keyring.Ring
	reg     *catalog.Registry
	client  *http.Client
	timeout time.Duration
}

var _ outbox.Deliverer = (*Purger)(nil)

// NewPurger returns the memory_namespace_purge deliverer. It reads providers
// from pool, opens their credentials with ring, looks their types up in reg,
// and calls the vendors through policy, each call bounded by timeout
// (providers.probe_timeout_seconds is the natural setting).
func NewPurger(pool *pgxpool.Pool, ring *keyring.Ring, reg *catalog.Registry, policy *endpoint.Policy, timeout time.Duration) *Purger {
	return &Purger{pool: pool, q: db.New(), ring: ring, reg: reg, client: policy.HTTPClient(timeout), timeout: timeout}
}

// Deliver purges the namespace the delivery names.
func (p *Purger) Deliver(ctx context.Context, d outbox.Claimed) outbox.Outcome {
	pl, err := decodePurge(d)
	if err != nil {
		return outbox.Permanent(err)
	}
	t, out, ok := p.target(ctx, d.WorkspaceID, pl)
	if !ok {
		return out
	}
	return p.send(ctx, t, pl.Namespace)
}

// decodePurge reads and checks the payload: a purge names a provider and a
// memory of the delivery's workspace, and the namespace svc made for that
// memory, so a corrupt row cannot purge a namespace svc did not make.
func decodePurge(d outbox.Claimed) (PurgePayload, error) {
	var pl PurgePayload
	if err := json.Unmarshal(d.Payload, &pl); err != nil {
		return pl, fmt.Errorf("the payload is not a namespace purge: %w", err)
	}
	switch {
	case d.WorkspaceID == "":
		return pl, errors.New("the delivery names no workspace")
	case !id.HasPrefix(pl.ProviderID, id.Provider):
		return pl, fmt.Errorf("the payload's provider_id %q is not a provider id", pl.ProviderID)
	case !id.HasPrefix(pl.MemoryID, id.Memory):
		return pl, fmt.Errorf("the payload's memory_id %q is not a memory id", pl.MemoryID)
	case pl.Namespace != namespaceFor(pl.MemoryID):
		return pl, fmt.Errorf("namespace %q is not the namespace of memory %s; svc purges only the namespaces it made", pl.Namespace, pl.MemoryID)
	}
	return pl, nil
}

// target loads what the call needs: the provider's type, config and opened
// credential. When it cannot, it returns the outcome and false.
func (p *Purger) target(ctx context.Context, workspaceID string, pl PurgePayload) (probe.Target, outbox.Outcome, bool) {
	_, err := p.q.MemoryGet(ctx, p.pool, db.MemoryGetParams{WorkspaceID: workspaceID, ID: pl.MemoryID})
	switch {
	case err == nil:
		return probe.Target{}, outbox.Permanent(fmt.Errorf("memory %s still exists; its namespace is not purged", pl.MemoryID)), false
	case !dbx.IsNotFound(err):
		return probe.Target{}, outbox.Failed(fmt.Errorf("read memory %s: %w", pl.MemoryID, err)), false
	}
	row, err := p.q.ProviderGet(ctx, p.pool, db.ProviderGetParams{WorkspaceID: workspaceID, Kind: string(catalog.KindMemory), ID: pl.ProviderID})
	switch {
	case dbx.IsNotFound(err):
		return probe.Target{}, outbox.Permanent(fmt.Errorf(
			"provider %s is not a memory provider of workspace %s (it no longer exists, or is of another kind); namespace %s cannot be purged by svc",
			pl.ProviderID, workspaceID, pl.Namespace)), false
	case err != nil:
		return probe.Target{}, outbox.Failed(fmt.Errorf("read provider %s: %w", pl.ProviderID, err)), false
	}
	typ, ok := p.reg.Lookup(row.Type)
	if !ok || typ.NamespaceDelete == "" {
		return probe.Target{}, outbox.Permanent(fmt.Errorf("provider type %q cannot delete namespaces", row.Type)), false
	}
	t := probe.Target{Type: typ, Config: map[string]any{}}
	if err := json.Unmarshal(row.Config, &t.Config); err != nil {
		return probe.Target{}, outbox.Permanent(fmt.Errorf("provider %s: stored config: %w", row.ID, err)), false
	}
	if err := secret.Open(p.ring, row.ID, row.Credential, &t.Credential); err != nil {
		if errors.Is(err, secret.ErrUnreadable) {
			err = fmt.Errorf("provider %s: the stored credential cannot be opened (its key is no longer in the key ring, or it was altered); set the credential again", row.ID)
		}
		return probe.Target{}, outbox.Failed(err), false
	}
	return t, outbox.Outcome{}, true
}

// send deletes the namespace at the vendor.
func (p *Purger) send(ctx context.Context, t probe.Target, namespace string) outbox.Outcome {
	req, err := probe.VendorRequest(ctx, t, http.MethodDelete, t.Type.NamespaceDelete, map[string]string{"namespace": namespace})
	if err != nil {
		return outbox.Failed(fmt.Errorf("purge namespace %s: %w", namespace, err))
	}
	resp, err := p.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return outbox.Failed(ctx.Err())
		}
		return outbox.Failed(fmt.Errorf("purge namespace %s: %s", namespace, probe.DescribeCallError(err, p.timeout)))
	}
	defer func() { _ = resp.Body.Close() }()
	// Only a 404's body matters (is it the vendor's error?); a 404 whose body
	// cannot be read is not known to be one, and fails.
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxPurgeAnswer))
	if err != nil {
		body = nil
	}
	out := purgeOutcome(t, resp.StatusCode, body)
	if out.Err != nil {
		out.Err = fmt.Errorf("purge namespace %s: %w", namespace, out.Err)
	}
	out.StatusCode = resp.StatusCode
	return out
}

// purgeOutcome maps the vendor's answer to the namespace delete.
func purgeOutcome(t probe.Target, status int, body []byte) outbox.Outcome {
	name := t.Type.DisplayName
	switch {
	case status >= 200 && status < 300:
		return outbox.Delivered()
	case status == http.StatusNotFound && isJSONObject(body):
		// The vendor's own error: no such namespace. Deliveries are at least
		// once, so this is the usual answer to a repeated purge.
		return outbox.Delivered()
	case status == http.StatusNotFound:
		return outbox.Failed(fmt.Errorf("the endpoint answered HTTP 404 Not Found, not as %s does; check the provider's base URL", name))
	case (status == http.StatusUnauthorized || status == http.StatusForbidden) && !probe.SendsKey(t):
		return outbox.Failed(fmt.Errorf("%s requires a credential (HTTP %d); none is stored", name, status))
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return outbox.Failed(fmt.Errorf("%s refused the provider's credential (HTTP %d)", name, status))
	case status == http.StatusTooManyRequests:
		return outbox.Failed(fmt.Errorf("%s is rate limiting the provider's credential (HTTP 429)", name))
	case status >= 500:
		return outbox.Failed(fmt.Errorf("%s answered HTTP %d, a server error", name, status))
	case status >= 300 && status < 400:
		return outbox.Failed(fmt.Errorf("the endpoint redirected (HTTP %d); configure the address it redirects to", status))
	default:
		return outbox.Failed(fmt.Errorf("%s refused the namespace delete (HTTP %d); check the provider's configuration", name, status))
	}
}

// isJSONObject reports whether body is one JSON object.
func isJSONObject(body []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	var obj map[string]json.RawMessage
	return dec.Decode(&obj) == nil && obj != nil && !dec.More()
}
