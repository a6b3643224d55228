package hosted

import (
	"maps"
	"net/http"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/sandbox"
)

func TestNewServesDeclaredEnvironmentTypes(t *testing.T) {
	t.Parallel()
	reg, err := catalog.New(catalog.Options{})
	require.NoError(t, err)
	drivers := New(http.DefaultClient)
	require.Len(t, drivers, 5)
	for id := range drivers {
		typ, ok := reg.Lookup(id)
		require.True(t, ok, id)
		require.Equal(t, catalog.KindEnvironment, typ.Kind, id)
		require.True(t, typ.Environment.ManagedInstances, id)
		require.Equal(t, id != TypeKubernetes, typ.Environment.Stop, "%s: stop as declared", id)
		require.True(t, typ.Environment.Destroy, id)
	}
	// modal needs the endpoint policy (it dials gRPC itself), so it has its
	// own constructor; it is declared without stop.
	typ, ok := reg.Lookup(TypeModal)
	require.True(t, ok)
	require.True(t, typ.Environment.ManagedInstances)
	require.False(t, typ.Environment.Stop)
	require.True(t, typ.Environment.Destroy)
	require.NotContains(t, drivers, TypeModal)
	var modal sandbox.Driver = NewModal(&endpoint.Policy{}, ModalOptions{})
	require.ErrorIs(t, modal.Stop(t.Context(), sandbox.Spec{}, nil), sandbox.ErrUnsupported)
	served := append(slices.Collect(maps.Keys(drivers)), TypeModal)
	require.ElementsMatch(t, Types(), served)
	for _, id := range []string{"docker", "local"} {
		require.NotContains(t, Types(), id)
	}
}

func TestResolveConfinesPaths(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"": "/w", ".": "/w", "a": "/w/a", "a/./b/": "/w/a/b", "a/../b": "/w/b", "..a": "/w/..a"} {
		got, err := resolve("/w", in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"/w/a", "..", "../w", "a/../../w", "a\x00"} {
		_, err := resolve("/w", in)
		require.Error(t, err, in)
	}
}
