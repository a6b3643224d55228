package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	mem "github.com/svcdev/svc/internal/memory"
	"github.com/svcdev/svc/internal/provider"
	"github.com/svcdev/svc/internal/provider/probe"
)

// Record is a record as the tools answer it.
type Record struct {
	ID       string          `json:"id"`
	Content  string          `json:"content"`
	Metadata json.RawMessage `json:"metadata"`
	// Score ranks search hits (higher is better); nil outside searches.
	Score *float64 `json:"score,omitempty"`
}

// store is where one memory's records are.
type store interface {
	// search answers at most limit records matching query, best first.
	search(ctx context.Context, query string, limit int) ([]Record, error)
	// read answers the record id, and false when the memory has none.
	read(ctx context.Context, id string) (Record, bool, error)
	// write stores a new record.
	write(ctx context.Context, rec Record) error
}

// refusal is a failure the model is told of (a tool error), in fixed text
// that carries no credential, address or vendor answer.
type refusal struct{ msg string }

func (r *refusal) Error() string { return r.msg }

// refusef returns a refusal.
func refusef(format string, args ...any) error {
	return &refusal{msg: fmt.Sprintf(format, args...)}
}

// open reads the memory m again and returns the store of its records, or a
// refusal when it can no longer be used: deleted, its provider disabled or
// gone, its credential unreadable.
func (t *Toolset) open(ctx context.Context, workspaceID string, m memoryInfo) (store, error) {
	row, ok, err := t.memories.TargetForRun(ctx, workspaceID, m.ID)
	switch {
	case err != nil:
		return nil, fmt.Errorf("memory tools: %w", err)
	case !ok:
		return nil, refusef("memory %s does not exist (it was deleted, or is not of this workspace)", m.ID)
	}
	if row.Kind == mem.KindBuiltin {
		return &builtinStore{ts: t, workspaceID: workspaceID, memoryID: row.ID}, nil
	}
	if row.ProviderID == nil || row.Namespace == nil || row.ProviderType == nil || row.ProviderEnabled == nil {
		return nil, refusef("memory %s cannot be used: its memory provider no longer exists", m.ID)
	}
	if !*row.ProviderEnabled {
		return nil, refusef("memory %s cannot be used now: its memory provider %s is disabled", m.ID, *row.ProviderID)
	}
	typ, ok := t.reg.Lookup(*row.ProviderType)
	if !ok || typ.Request == nil {
		return nil, refusef("memory %s cannot be used: provider type %q is not installed in this deployment", m.ID, *row.ProviderType)
	}
	target := probe.Target{Type: typ, Config: map[string]any{}}
	if err := json.Unmarshal(row.ProviderConfig, &target.Config); err != nil {
		return nil, fmt.Errorf("memory tools: provider %s: stored config: %w", *row.ProviderID, err)
	}
	if target.Credential, err = row.Credential(); err != nil {
		if errors.Is(err, provider.ErrSecretUnreadable) {
			return nil, refusef("memory %s cannot be used: the stored credential of its provider %s cannot be opened; an administrator must set it again",
				m.ID, *row.ProviderID)
		}
		return nil, fmt.Errorf("memory tools: %w", err)
	}
	v := vendor{client: t.client, timeout: t.timeout, target: target, namespace: *row.Namespace}
	switch typ.ID {
	case "pinecone":
		return &pineconeStore{v}, nil
	case "turbopuffer":
		return &turbopufferStore{v}, nil
	default:
		return nil, refusef("memory %s cannot be used: provider type %q has no record API in svc", m.ID, typ.ID)
	}
}
