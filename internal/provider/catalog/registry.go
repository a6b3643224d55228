package catalog

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/svcdev/svc/internal/apperr"
)

// builtins declares every installed type; each vendor's constructor is in its
// own file. localEnvironment is added only when the deployment enables it.
var builtins = []func() Type{
	// model
	openAI, anthropic, googleGemini, azureOpenAI, awsBedrock, googleVertex, mistral,
	cohere, groq, together, fireworks, deepSeek, xAI, perplexity, cerebras, ollama,
	openAICompatible, huggingFace, openRouter, portkey, claudeSubscription,
	// web
	tavily, exa, brave, serper, serpAPI, firecrawl, jina, googleCSE, searXNG, kagi,
	// environment
	docker, kubernetes, e2b, daytona, modal, runloop, flyMachines,
	// connector
	composio,
	// memory
	pinecone, turbopuffer,
}

// LocalType is the id of the development-only environment type.
const LocalType = "local"

// compiled builds and compiles every type once per process: the declarations
// are static, so the result is shared by all registries.
var compiled = sync.OnceValues(func() ([]Type, error) {
	all := make([]Type, 0, len(builtins)+1)
	for _, f := range append(slices.Clone(builtins), localEnvironment) {
		all = append(all, f())
	}
	c := newCompiler()
	seen := map[string]bool{}
	for _, t := range all {
		if err := t.check(); err != nil {
			return nil, err
		}
		if seen[t.ID] {
			return nil, fmt.Errorf("provider type %q is declared twice", t.ID)
		}
		seen[t.ID] = true
		for name, s := range t.schemas() {
			if err := c.compile(s, t.ID+"/"+name); err != nil {
				return nil, err
			}
		}
	}
	return all, nil
})

// Options selects the installed types.
type Options struct {
	// LocalEnabled installs the `local` environment type
	// (config environments.local_enabled).
	LocalEnabled bool
}

// Registry holds the installed types. It is immutable and safe for concurrent use.
type Registry struct {
	byKind map[Kind][]Type
	byID   map[string]Type
}

// New returns the registry of installed types. It fails only when a built-in
// declaration is broken (a schema that does not compile), which is a bug.
func New(o Options) (*Registry, error) {
	all, err := compiled()
	if err != nil {
		return nil, err
	}
	r := &Registry{byKind: map[Kind][]Type{}, byID: map[string]Type{}}
	for _, t := range all {
		if t.ID == LocalType && !o.LocalEnabled {
			continue
		}
		r.byKind[t.Kind] = append(r.byKind[t.Kind], t)
		r.byID[t.ID] = t
	}
	for _, k := range Kinds {
		slices.SortFunc(r.byKind[k], func(a, b Type) int { return strings.Compare(a.ID, b.ID) })
	}
	return r, nil
}

// List returns the installed types of a kind sorted by id. The slice is shared:
// callers must not modify it.
func (r *Registry) List(k Kind) []Type { return r.byKind[k] }

// Lookup returns the installed type with the id, of whatever kind.
func (r *Registry) Lookup(id string) (Type, bool) {
	t, ok := r.byID[id]
	return t, ok
}

// Resolve returns the installed type named by a create request's `type` for a
// collection of kind k. An unknown type, or one of another kind, is
// invalid_argument naming the field "type".
func (r *Registry) Resolve(k Kind, id string) (Type, error) {
	t, ok := r.byID[id]
	switch {
	case !ok && len(id) > 64: // no type id is this long; do not echo it
		return Type{}, apperr.InvalidField("type", fmt.Sprintf("unknown %s provider type", k))
	case !ok:
		return Type{}, apperr.InvalidField("type", fmt.Sprintf("unknown %s provider type %q", k, id))
	case t.Kind != k:
		return Type{}, apperr.InvalidField("type", fmt.Sprintf("%q is a %s provider type, not a %s provider type", id, t.Kind, k))
	}
	return t, nil
}
