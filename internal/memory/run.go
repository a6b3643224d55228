package memory

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/provider"
)

// RunMemory is one of the memories a run's agent lists, as its memory tools
// describe it.
type RunMemory struct {
	ID          string
	Kind        Kind
	Name        string
	Description string
	// ProviderType and ProviderEnabled are a record memory's provider's; nil
	// for a builtin memory, or a provider that no longer exists.
	ProviderType    *string
	ProviderEnabled *bool
}

// ListForRun reads the memories of the workspace among ids, ordered by id,
// with the state of their providers, in one read; ids that name none are
// absent from the answer.
func (s *Service) ListForRun(ctx context.Context, workspaceID string, ids []string) ([]RunMemory, error) {
	rows, err := s.q.MemoryToolList(ctx, s.pool, db.MemoryToolListParams{WorkspaceID: workspaceID, Ids: ids})
	if err != nil {
		return nil, fmt.Errorf("read the memories of workspace %s: %w", workspaceID, err)
	}
	out := make([]RunMemory, len(rows))
	for i, r := range rows {
		out[i] = RunMemory{ID: r.ID, Kind: Kind(r.Kind), Name: r.Name, Description: r.Description,
			ProviderType: r.ProviderType, ProviderEnabled: r.ProviderEnabled}
	}
	return out, nil
}

// RunTarget is one memory as a run's call needs it now: its kind and, for a
// record memory, its namespace and its provider's current configuration.
// Never put it in a view, a log or an error.
type RunTarget struct {
	ID        string
	Kind      Kind
	Namespace *string
	// The provider's fields are nil for a builtin memory, or a provider
	// that no longer exists.
	ProviderID      *string
	ProviderType    *string
	ProviderEnabled *bool
	ProviderConfig  json.RawMessage

	ring       *keyring.Ring
	credential []byte
}

// Credential opens the stored credential of the memory's provider (nil when
// none is stored). One that cannot be opened fails with an error wrapping
// provider.ErrSecretUnreadable.
func (t RunTarget) Credential() (map[string]any, error) {
	if t.ProviderID == nil {
		return nil, nil
	}
	sec, err := provider.OpenSealed(t.ring, *t.ProviderID, t.credential, nil)
	if err != nil {
		return nil, err
	}
	return sec.Credential, nil
}

// TargetForRun reads memory memoryID of the workspace as a run's call needs
// it now; false when the workspace has no such memory.
func (s *Service) TargetForRun(ctx context.Context, workspaceID, memoryID string) (RunTarget, bool, error) {
	row, err := s.q.MemoryToolTarget(ctx, s.pool, db.MemoryToolTargetParams{WorkspaceID: workspaceID, ID: memoryID})
	switch {
	case dbx.IsNotFound(err):
		return RunTarget{}, false, nil
	case err != nil:
		return RunTarget{}, false, fmt.Errorf("read memory %s: %w", memoryID, err)
	}
	return RunTarget{
		ID: row.ID, Kind: Kind(row.Kind), Namespace: row.Namespace, ProviderID: row.ProviderID, ProviderType: row.ProviderType,
		ProviderEnabled: row.ProviderEnabled, ProviderConfig: row.ProviderConfig, ring: s.ring, credential: row.ProviderCredential,
	}, true, nil
}
