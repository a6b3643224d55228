package docker

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/sandbox"
)

// isZombie reports whether pid has exited but is not yet reaped.
func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] == 'Z'
}

// rootfs is the host directory of the instance's container in the stand-in.
func rootfs(b *testBundle, inst *Instance) string {
	return b.engine.container(inst.ContainerID()).rootfs
}

func TestFilesWriteReadList(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inst, _ := b.open(t)
	ctx := t.Context()
	require.NoError(t, inst.WriteFile(ctx, "a.txt", []byte("one")))
	require.NoError(t, inst.WriteFile(ctx, "a.txt", []byte("two!")))
	require.NoError(t, inst.WriteFile(ctx, "sub/dir/b.txt", []byte("bee")))
	require.NoError(t, inst.WriteFile(ctx, "sub/c.txt", []byte("sea")))

	got, err := inst.ReadFile(ctx, "a.txt", 0)
	require.NoError(t, err)
	require.Equal(t, sandbox.File{Data: []byte("two!"), Size: 4}, got)
	got, err = inst.ReadFile(ctx, "a.txt", 2)
	require.NoError(t, err)
	require.Equal(t, sandbox.File{Data: []byte("tw"), Size: 4, Truncated: true}, got)
	got, err = inst.ReadFile(ctx, "sub/../sub/dir/b.txt", 0)
	require.NoError(t, err)
	require.Equal(t, "bee", string(got.Data))

	// The files are where a command in the container sees them, as the container's user.
	res, err := inst.Run(ctx, sandbox.Command{Argv: []string{"cat", "sub/dir/b.txt"}})
	require.NoError(t, err)
	require.Equal(t, "bee", string(res.Stdout))
	require.Contains(t, b.engine.RawRequests(), "PUT /v1.47/containers/"+inst.ContainerID()+"/archive?copyUIDGID=1&noOverwriteDirNonDir=1&path=%2Fworkspace%2Fsub")

	entries, err := inst.List(ctx, "")
	require.NoError(t, err)
	require.Len(t, entries, 2)
	require.Equal(t, "a.txt", entries[0].Name)
	require.False(t, entries[0].Dir)
	require.EqualValues(t, 4, entries[0].Size)
	require.False(t, entries[0].MTime.IsZero())
	require.Equal(t, "sub", entries[1].Name)
	require.True(t, entries[1].Dir)
	entries, err = inst.List(ctx, "sub")
	require.NoError(t, err)
	require.Equal(t, []string{"c.txt", "dir"}, names(entries))

	_, err = inst.ReadFile(ctx, "missing", 0)
	require.ErrorIs(t, err, sandbox.ErrNotFound)
	_, err = inst.List(ctx, "missing")
	require.ErrorIs(t, err, sandbox.ErrNotFound)
	_, err = inst.ReadFile(ctx, "sub", 0)
	require.ErrorContains(t, err, "not a regular file")
	_, err = inst.List(ctx, "a.txt")
	require.ErrorContains(t, err, "not a directory")
	require.ErrorContains(t, inst.WriteFile(ctx, "sub", []byte("x")), "cannot overwrite directory", "a directory is never replaced by a file")
	require.ErrorContains(t, inst.WriteFile(ctx, "a.txt/x", []byte("x")), "is not a directory")
	require.ErrorIs(t, inst.WriteFile(ctx, "big", make([]byte, sandbox.MaxWriteBytes+1)), ErrTooLarge)
	require.ErrorIs(t, inst.WriteFile(ctx, ".", []byte("x")), sandbox.ErrPath)
}

func names(entries []sandbox.Entry) []string {
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		out = append(out, e.Name)
	}
	return out
}

func TestFilesRefuseTraversal(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inst, _ := b.open(t)
	ctx := t.Context()
	for _, name := range []string{"../x", "../../etc/passwd", "a/../../x", "/etc/passwd", "..", "a\x00b", `..\x`} {
		_, err := inst.ReadFile(ctx, name, 0)
		require.ErrorIs(t, err, sandbox.ErrPath, name)
		require.ErrorIs(t, inst.WriteFile(ctx, name, []byte("x")), sandbox.ErrPath, name)
		_, err = inst.List(ctx, name)
		require.ErrorIs(t, err, sandbox.ErrPath, name)
	}
	for _, r := range b.engine.Requests() {
		require.NotContains(t, r, "archive", "a refused path never reaches the engine")
	}
}

func TestFilesFollowLinksInTheContainer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inst, _ := b.open(t)
	ctx := t.Context()
	require.NoError(t, inst.WriteFile(ctx, "d/target", []byte("in")))
	work := filepath.Join(rootfs(b, inst), "workspace")
	require.NoError(t, os.Symlink("d/target", filepath.Join(work, "rel-link")))
	require.NoError(t, os.Symlink("/workspace/d/target", filepath.Join(work, "abs-link")))
	require.NoError(t, os.Symlink("/workspace/d", filepath.Join(work, "dir-link")))
	for _, name := range []string{"rel-link", "abs-link", "dir-link/target"} {
		got, err := inst.ReadFile(ctx, name, 0)
		require.NoError(t, err, name)
		require.Equal(t, "in", string(got.Data), name)
	}
	entries, err := inst.List(ctx, "dir-link")
	require.NoError(t, err)
	require.Equal(t, []string{"target"}, names(entries))
	// Writing through a linked directory writes into the directory it names.
	require.NoError(t, inst.WriteFile(ctx, "dir-link/new", []byte("n")))
	got, err := inst.ReadFile(ctx, "d/new", 0)
	require.NoError(t, err)
	require.Equal(t, "n", string(got.Data))
	// A link's target outside the working directory stays inside the container.
	require.NoError(t, os.Symlink("/../../../etc/hostname", filepath.Join(work, "out-link")))
	_, err = inst.ReadFile(ctx, "out-link", 0)
	require.ErrorIs(t, err, sandbox.ErrNotFound, "resolved in the container's root, where it does not exist")
}

func TestConcurrentWritesNeverMix(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inst, _ := b.open(t)
	ctx := t.Context()
	a, c := []byte(strings.Repeat("a", 1<<20)), []byte(strings.Repeat("c", 1<<20))
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			data := a
			if i%2 == 1 {
				data = c
			}
			for range 3 {
				require.NoError(t, inst.WriteFile(ctx, "f", data))
			}
		})
	}
	wg.Wait()
	got, err := inst.ReadFile(ctx, "f", 2<<20)
	require.NoError(t, err)
	require.True(t, string(got.Data) == string(a) || string(got.Data) == string(c), "a mixed file of %d bytes", len(got.Data))
	entries, err := inst.List(ctx, "")
	require.NoError(t, err)
	require.Equal(t, []string{"f"}, names(entries))
}
