// Package app assembles a process from its configuration and role: it builds the
// dependencies, starts only what the role needs, and stops them in order.
package app

import (
	"fmt"
	"strings"
)

// Role is what a process does: control (the API and the sweeps), worker (the
// runs), or all of them.
type Role string

// The roles.
const (
	RoleAll     Role = "all"
	RoleControl Role = "control"
	RoleWorker  Role = "worker"
)

// Roles lists the valid roles.
var Roles = []Role{RoleAll, RoleControl, RoleWorker}

// ParseRole validates a role name.
func ParseRole(s string) (Role, error) {
	for _, r := range Roles {
		if string(r) == s {
			return r, nil
		}
	}
	names := make([]string, len(Roles))
	for i, r := range Roles {
		names[i] = string(r)
	}
	return "", fmt.Errorf("unknown role %q: use one of %s", s, strings.Join(names, ", "))
}

// Control reports whether the role serves the API and runs the maintenance sweeps.
func (r Role) Control() bool { return r == RoleAll || r == RoleControl }

// Worker reports whether the role claims and executes runs.
func (r Role) Worker() bool { return r == RoleAll || r == RoleWorker }
