package objectstore_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/objectstore"
	"github.com/svcdev/svc/internal/objectstore/objectstoretest"
)

func TestFileStore(t *testing.T) {
	t.Parallel()
	objectstoretest.Run(t, func(t *testing.T) objectstore.Store {
		s, err := objectstore.OpenFile(filepath.Join(t.TempDir(), "objects"))
		require.NoError(t, err)
		return s
	}, objectstoretest.Hooks{NoLeftovers: func(t *testing.T, s objectstore.Store) {
		t.Helper()
		require.Empty(t, tempFiles(t, s.(*objectstore.FileStore).Dir()), "a failed Put left its temporary file")
	}})
}

// TestFileStoreStaysInItsDirectory writes through every refused key next to
// a sentinel tree and checks that nothing appeared outside the store.
func TestFileStoreStaysInItsDirectory(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s, err := objectstore.OpenFile(filepath.Join(root, "store", "objects"))
	require.NoError(t, err)
	for _, key := range objectstoretest.InvalidKeys {
		_, err := s.Put(t.Context(), key, strings.NewReader("x"), 1, objectstore.PutOptions{})
		require.ErrorIs(t, err, objectstore.ErrInvalidKey, "%q", key)
	}
	var files []string
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	}))
	require.Empty(t, files)
}

// TestFileStoreCheck: a missing or read-only directory is reported.
func TestFileStoreCheck(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "objects")
	s, err := objectstore.OpenFile(dir)
	require.NoError(t, err)
	require.NoError(t, s.Check(t.Context()))
	require.Equal(t, "file://"+dir, s.Describe())
	require.NoError(t, os.Remove(dir))
	require.Error(t, s.Check(t.Context()))
	require.NoError(t, os.WriteFile(dir, []byte("not a directory"), 0o600))
	require.ErrorContains(t, s.Check(t.Context()), "not a directory")
}

func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && objectstore.IsTemp(d.Name()) {
			out = append(out, p)
		}
		return err
	}))
	return out
}
