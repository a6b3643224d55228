package identity

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apperr"
)

func TestRoleAtMost(t *testing.T) {
	t.Parallel()
	roles := []string{"viewer", "runner", "editor", "admin"}
	for i, a := range roles {
		for j, b := range roles {
			require.Equal(t, i <= j, roleAtMost(a, b), "%s <= %s", a, b)
		}
	}
	require.False(t, roleAtMost("owner", "admin"), "unknown roles are never within a cap")
	require.False(t, roleAtMost("viewer", ""), "no role caps everything")
}

func TestValidateName(t *testing.T) {
	t.Parallel()
	for name, ok := range map[string]bool{
		"Research":               true,
		"Ünïcödé ✓":              true,
		strings.Repeat("é", 200): true,
		"":                       false,
		strings.Repeat("x", 201): false,
		"tab\there":              false,
		"nul\x00":                false,
		"del\x7f":                false,
		"bad utf8 \xff":          false,
	} {
		err := validateName("name", name)
		if ok {
			require.NoError(t, err, "%q", name)
		} else {
			require.Equal(t, apperr.KindInvalidArgument, apperr.KindOf(err), "%q", name)
		}
	}
}
