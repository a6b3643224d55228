// Package memory is the memory toolset: the tools the agent loop offers a
// run for the memories its agent lists (AgentConfig.memories). There are
// three, shared by all of the agent's memories, each naming the memory in its
// `memory` argument (the memory's id or name, an enum in the schema):
//
//   - memory_search: records matching a query text, best first, each with
//     its id, content, metadata and score;
//   - memory_read: one record by id;
//   - memory_write: a new record (content up to 16 KiB, a metadata object up
//     to 4 KiB); it answers the record's id. Records written in a run carry
//     its id in metadata.run_id (CallOptions).
//
// A builtin memory's records are rows of memory_record, searched with
// PostgreSQL full-text search (the 'simple' configuration, ranked with
// ts_rank; a query with no lexemes is matched as a substring instead). A
// record memory's records are in its namespace at its memory provider:
// Pinecone (an index with integrated embedding that embeds the field
// `content`) or turbopuffer (BM25 over the attribute `content`). Vendors are
// called through the endpoint policy with the provider's current config and
// opened credential (see docs/decisions/0033-memory-toolset.md).
//
// Memories, their providers and builtin records are read and written
// through the memory service (package memory under internal/). Each call
// reads the memory and its provider again: a memory deleted, or
// whose provider was disabled, since the tools were built gives the model a
// tool error, as do bad arguments and a vendor's refusal. A Go error means a
// failure of svc (the database) or of the call's context.
package memory

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/svcdev/svc/internal/agent"
	"github.com/svcdev/svc/internal/endpoint"
	mem "github.com/svcdev/svc/internal/memory"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/tool"
)

// Limits of the tools' arguments.
const (
	// MaxContentBytes bounds a written record's content (UTF-8 bytes).
	MaxContentBytes = 16 << 10
	// MaxMetadataBytes bounds a written record's metadata object, as compact JSON.
	MaxMetadataBytes = 4 << 10
	// MaxQueryBytes bounds a search's query text.
	MaxQueryBytes = 4 << 10
	// MaxLimit is the most records a search answers; DefaultLimit is used when
	// the call gives none.
	MaxLimit     = 20
	DefaultLimit = 5
)

// DefaultTimeout bounds a call when Deps.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// Deps are what the toolset needs.
type Deps struct {
	// Memories read the memories, their providers (credentials opened) and
	// builtin memories' records.
	Memories *mem.Service
	// Registry describes the provider types (base URL, headers, auth).
	Registry *catalog.Registry
	// Policy guards every call to a memory vendor.
	Policy *endpoint.Policy
	// Timeout bounds each tool call, vendor call included; zero means
	// DefaultTimeout.
	Timeout time.Duration
}

// Toolset builds the memory tools of runs. It is safe for concurrent use.
type Toolset struct {
	memories *mem.Service
	reg      *catalog.Registry
	client   *http.Client
	timeout  time.Duration
}

// New returns the toolset.
func New(deps Deps) *Toolset {
	timeout := deps.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Toolset{
		memories: deps.Memories, reg: deps.Registry,
		client: deps.Policy.HTTPClient(timeout), timeout: timeout,
	}
}

// CallOptions are facts of the run a call serves, which the loop puts in the
// call's context with WithCallOptions.
type CallOptions struct {
	// RunID is stored as metadata.run_id of the records the run writes; empty
	// stores none.
	RunID string
}

type callOptionsKey struct{}

// WithCallOptions returns ctx carrying o for the memory tools' calls.
func WithCallOptions(ctx context.Context, o CallOptions) context.Context {
	return context.WithValue(ctx, callOptionsKey{}, o)
}

// callOptionsFrom returns the options ctx carries, or none.
func callOptionsFrom(ctx context.Context) CallOptions {
	o, _ := ctx.Value(callOptionsKey{}).(CallOptions)
	return o
}

// Tools returns the memory tools for the memories memoryIDs of workspace
// workspaceID (an agent's memories, in its order), or none when it lists
// none. A listed memory that does not exist in the workspace (deleted, or of
// another workspace) stays choosable by id, and calls naming it get a tool
// error. An error is a failure to read the database.
func (t *Toolset) Tools(ctx context.Context, workspaceID string, memoryIDs []string) ([]tool.Tool, error) {
	ids := uniqueIDs(memoryIDs)
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := t.memories.ListForRun(ctx, workspaceID, ids)
	if err != nil {
		return nil, fmt.Errorf("memory tools: %w", err)
	}
	set := newMemorySet(ids, rows)
	b := &binding{set: set, ts: t, workspaceID: workspaceID}
	return []tool.Tool{
		{Def: searchDef(set), Call: b.search, Toolset: agent.ToolsetMemory},
		{Def: readDef(set), Call: b.read, Toolset: agent.ToolsetMemory},
		{Def: writeDef(set), Call: b.write, Toolset: agent.ToolsetMemory},
	}, nil
}

// uniqueIDs is ids without empty and repeated ones, in order.
func uniqueIDs(ids []string) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if id != "" && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}
