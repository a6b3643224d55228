package memory

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	mem "github.com/svcdev/svc/internal/memory"
)

// maxListedDescription bounds, in characters, each memory's description as
// the tools' descriptions repeat it: an agent may list 16 memories with 2,000
// characters each, and the model reads the list in all three tools.
const maxListedDescription = 200

// memoryInfo is one of an agent's memories as the tools were built.
type memoryInfo struct {
	ID          string
	Name        string
	Kind        mem.Kind
	Description string
	// Vendor is the provider type of a record memory ("" for builtin).
	Vendor string
	// Exists is false for a listed id the workspace has no memory of.
	Exists bool
	// Disabled is true for a record memory whose provider was disabled
	// when the tools were built.
	Disabled bool
}

// memorySet is an agent's memories, in the agent's order.
type memorySet struct {
	list []memoryInfo
}

// newMemorySet pairs the listed ids with the rows found.
func newMemorySet(ids []string, rows []mem.RunMemory) memorySet {
	byID := make(map[string]mem.RunMemory, len(rows))
	for _, r := range rows {
		byID[r.ID] = r
	}
	s := memorySet{list: make([]memoryInfo, 0, len(ids))}
	for _, id := range ids {
		r, ok := byID[id]
		if !ok {
			s.list = append(s.list, memoryInfo{ID: id})
			continue
		}
		m := memoryInfo{ID: r.ID, Name: r.Name, Kind: r.Kind, Description: r.Description, Exists: true}
		if r.ProviderType != nil {
			m.Vendor = *r.ProviderType
		}
		m.Disabled = r.ProviderEnabled != nil && !*r.ProviderEnabled
		s.list = append(s.list, m)
	}
	return s
}

// nameCount counts the existing memories called name.
func (s memorySet) nameCount(name string) int {
	n := 0
	for _, m := range s.list {
		if m.Exists && m.Name == name {
			n++
		}
	}
	return n
}

// choices are the values the `memory` argument accepts: every id, and every
// name that only one memory has and that is not also an id.
func (s memorySet) choices() []string {
	out := make([]string, 0, 2*len(s.list))
	for _, m := range s.list {
		out = append(out, m.ID)
	}
	for _, m := range s.list {
		if m.Exists && s.nameCount(m.Name) == 1 && !slices.Contains(out, m.Name) {
			out = append(out, m.Name)
		}
	}
	return out
}

// resolve finds the memory the argument names, by id, else by name. The
// message explains a failure to the model.
func (s memorySet) resolve(arg string) (memoryInfo, string) {
	for _, m := range s.list {
		if m.ID == arg {
			return m, ""
		}
	}
	var found []memoryInfo
	for _, m := range s.list {
		if m.Exists && m.Name == arg {
			found = append(found, m)
		}
	}
	switch len(found) {
	case 1:
		return found[0], ""
	case 0:
		return memoryInfo{}, fmt.Sprintf("%q is not one of this agent's memories; use one of: %s", arg, strings.Join(s.choices(), ", "))
	default:
		return memoryInfo{}, fmt.Sprintf("more than one of this agent's memories is called %q; name the memory by its id", arg)
	}
}

// describe lists the memories for the tools' descriptions.
func (s memorySet) describe() string {
	var b strings.Builder
	b.WriteString("The agent's memories:")
	for _, m := range s.list {
		if !m.Exists {
			fmt.Fprintf(&b, "\n- %s: does not exist (deleted?)", m.ID)
			continue
		}
		fmt.Fprintf(&b, "\n- %q (%s", m.Name, m.ID)
		if s.nameCount(m.Name) > 1 {
			b.WriteString("; name shared, use the id")
		}
		b.WriteString(")")
		if m.Disabled {
			b.WriteString(" [unusable for now: its memory provider is disabled]")
		}
		if d := strings.TrimSpace(m.Description); d != "" {
			fmt.Fprintf(&b, ": %s", truncateRunes(d, maxListedDescription))
		}
	}
	return b.String()
}

// truncateRunes cuts s to at most n characters, marking a cut with "...".
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "..."
}
