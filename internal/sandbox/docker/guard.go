package docker

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/svcdev/svc/internal/apperr"
)

// The operator configuration keys that allow what the Guard refuses.
const (
	KeyNetworks  = "environments.docker_networks"
	KeyAllowRoot = "environments.docker_allow_root"
)

// Guard is the operator's rule on the docker type's options that reach
// beyond a tenant's own container. One engine serves every workspace, so:
//
//   - the provider's `network` must be one the operator listed (Networks):
//     `host` shares the host's network namespace (its loopback services,
//     which the endpoint policy never sees), `container:<x>` another
//     container's, and any other name is an engine-wide network that other
//     workspaces' containers can join too; leaving it out (or `none`) is
//     always allowed;
//   - unless AllowRoot, the template's `user` must be a numeric uid[:gid]
//     other than 0: a name is resolved through the image's /etc/passwd, which
//     the tenant writes and may map to uid 0. A template without a user runs
//     as the image's own user, which the driver checks the same way when it
//     creates the container; and the container gets no-new-privileges, so a
//     set-uid program in the image cannot make the user root.
//
// The type's schemas accept nothing else that touches the host (no
// privileged mode, capabilities, devices, mounts, namespace modes or security
// options): the driver sets the container's host configuration itself.
// See docs/decisions/0043-docker-isolation.md.
type Guard struct {
	Networks  []string
	AllowRoot bool
}

// TypeID is the provider type the driver and the Guard serve.
const TypeID = "docker"

// Refusal is an option the Guard refuses: Field is the member of the
// provider's or template's config, Reason says why and which key allows it.
// It wraps ErrInvalidConfig.
type Refusal struct {
	Field  string
	Reason string
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("envdocker: invalid configuration: %s %s", r.Field, r.Reason)
}

func (r *Refusal) Unwrap() error { return ErrInvalidConfig }

// CheckNetwork refuses a network the operator did not list.
func (g Guard) CheckNetwork(network string) error {
	if network == "" || network == "none" || slices.Contains(g.Networks, network) {
		return nil
	}
	var why string
	switch {
	case network == "host":
		why = "shares the host's network namespace, its loopback services included"
	case strings.HasPrefix(network, "container:"):
		why = "shares another container's network namespace"
	default:
		why = "is an engine-wide network that other workspaces' containers can join"
	}
	return &Refusal{Field: "network", Reason: fmt.Sprintf("%q %s; an operator can allow it by listing it in %s", network, why, KeyNetworks)}
}

// CheckUser refuses a user that is, or may be, root. An empty user is not
// judged here: it is the image's user (see CheckImageUser).
func (g Guard) CheckUser(user string) error {
	if user == "" || g.AllowRoot || nonRootID(user) {
		return nil
	}
	return &Refusal{Field: "user", Reason: "must be a numeric uid[:gid] other than 0, such as 1000:1000 (a name is resolved by the image, which may map it to root); " +
		KeyAllowRoot + " allows root and names"}
}

// CheckImageUser refuses the image's own user (the container's user when
// the template gives none) unless it is a numeric non-root uid[:gid].
func (g Guard) CheckImageUser(image, user string) error {
	if g.AllowRoot || nonRootID(user) {
		return nil
	}
	shown := user
	if shown == "" {
		shown = "root"
	}
	return &Refusal{Field: "user", Reason: fmt.Sprintf("is not set and the image %s runs as %q; set a numeric uid[:gid] other than 0, such as 1000:1000 (%s allows root)",
		image, clean(shown), KeyAllowRoot)}
}

// nonRootID reports whether u is uid or uid:gid, decimal, neither 0.
func nonRootID(u string) bool {
	uid, gid, hasGID := strings.Cut(u, ":")
	if !nonZeroID(uid) {
		return false
	}
	return !hasGID || nonZeroID(gid)
}

func nonZeroID(s string) bool {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return false
	}
	n, err := strconv.ParseUint(s, 10, 32)
	return err == nil && n != 0
}

// ProviderCheck is the Guard as a check of a docker provider's config when
// it is saved: a refusal is invalid_argument naming config.<field>.
func (g Guard) ProviderCheck(cfg map[string]any) error {
	network, _ := cfg["network"].(string)
	return apiError(g.CheckNetwork(network))
}

// TemplateCheck is the Guard as a check of a docker template's config when
// it is saved: a refusal is invalid_argument naming config.<field>.
func (g Guard) TemplateCheck(cfg map[string]any) error {
	user, _ := cfg["user"].(string)
	return apiError(g.CheckUser(user))
}

func apiError(err error) error {
	var r *Refusal
	if !errors.As(err, &r) {
		return err
	}
	field := "config." + r.Field
	return apperr.InvalidArgument(field+" is not allowed on this deployment", apperr.Detail{Field: field, Reason: r.Reason})
}
