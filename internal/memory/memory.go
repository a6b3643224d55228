// Package memory manages memories: what runs remember across threads. A
// memory is one of two kinds:
//
//   - record: its records live with a memory provider of the workspace, in a
//     namespace svc generates (the memory's id) and that never starts with
//     the provider test's `svc-probe-` prefix, so a test never touches a
//     memory's data. Deleting it queues a memory_namespace_purge delivery in
//     the same transaction; the outbox purges the namespace at the vendor at
//     least once, even if the provider is disabled meanwhile.
//   - builtin: its records are rows of memory_record in PostgreSQL. Deleting
//     it deletes them in the same transaction.
//
// Runs read and write records through the memory toolset (package
// tool/memory); here the memory resource itself is created, listed, read,
// renamed and deleted, and people browse and search a builtin memory's
// records (ListRecords, GetRecord). svc does not browse a record memory's
// records at its provider: those methods answer 409 conflict for one.
package memory

import (
	"time"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/resource"
)

// Kind is the kind of a memory.
type Kind string

// The kinds of memories.
const (
	KindRecord  Kind = "record"
	KindBuiltin Kind = "builtin"
)

// fieldProvider is the contract's name of a record memory's provider.
const fieldProvider = "memory_provider_id"

// Memory is the view of a memory.
type Memory struct {
	ID          string
	WorkspaceID string
	Kind        Kind
	Name        string
	Description string
	// ProviderID and Namespace are set for record memories only.
	ProviderID  *string
	Namespace   *string
	Version     int32
	CreatedByID string
	UpdatedByID string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// ETag is the memory's entity tag.
func (m Memory) ETag() string { return resource.ETag(m.ID, m.Version) }

// Page is one page of a list, newest first; NextCursor is nil on the last page.
type Page = resource.Page[Memory]

// CreateInput is a new memory.
type CreateInput struct {
	Name        string
	Description string
	Kind        Kind
	// ProviderID is required for record memories and refused for builtin ones.
	ProviderID *string
}

// UpdateInput is a PATCH of a memory: members left out keep their values.
type UpdateInput struct {
	ID          string
	IfMatch     *string
	Name        *string
	Description *string
}

// PurgePayload is the payload of the memory_namespace_purge delivery queued
// when a record memory is deleted: the namespace to purge at the provider.
type PurgePayload struct {
	ProviderID string `json:"provider_id"`
	Namespace  string `json:"namespace"`
	MemoryID   string `json:"memory_id"`
}

// namespaceFor returns the namespace of a new record memory: its id
// (`mem_` and a lowercase ULID), which is unique, made of characters every
// memory vendor accepts in a namespace, and cannot start with
// probe.NamespacePrefix (a CHECK on the column says so too).
func namespaceFor(memoryID string) string { return memoryID }

// memoryOf maps a row to the view.
func memoryOf(r db.Memory) Memory {
	return Memory{
		ID: r.ID, WorkspaceID: r.WorkspaceID, Kind: Kind(r.Kind), Name: r.Name, Description: r.Description,
		ProviderID: r.ProviderID, Namespace: r.Namespace, Version: r.Version, CreatedByID: r.CreatedByID,
		UpdatedByID: r.UpdatedByID, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}
}
