package tool

import (
	"fmt"
	"regexp"
	"strings"
)

var unsafeName = regexp.MustCompile(`[^a-z0-9_]+`)

// Name makes a name of prefix and a display name (an agent's, a skill's):
// lowercase letters, digits and underscores, at most 64 characters, unique
// in used, which it records. It names a subagent's tool and the directory of
// a skill's files.
func Name(prefix, display string, used map[string]bool) string {
	base := strings.Trim(unsafeName.ReplaceAllString(strings.ToLower(display), "_"), "_")
	if base == "" {
		base = "agent"
	}
	base = prefix + base
	if len(base) > 60 {
		base = base[:60]
	}
	name := base
	for i := 2; used[name]; i++ {
		name = fmt.Sprintf("%s_%d", base, i)
	}
	used[name] = true
	return name
}
