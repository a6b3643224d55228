// Package objectstoretest is the behaviour every objectstore.Store must have,
// as one suite run against each implementation, and the S3 server tests use.
// Import it only from tests.
package objectstoretest

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/objectstore"
)

// Factory returns a new, empty store for one test.
type Factory func(t *testing.T) objectstore.Store

// Hooks let an implementation's test add checks the suite cannot make itself.
type Hooks struct {
	// NoLeftovers, when set, is called after every failed Put to assert that
	// nothing of it remains (temporary files, incomplete multipart uploads).
	NoLeftovers func(t *testing.T, s objectstore.Store)
}

// Run runs the suite against stores made by newStore.
func Run(t *testing.T, newStore Factory, hooks Hooks) {
	t.Run("PutGetStat", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		key := mustKey(t, "assets", "as_1")
		data := []byte("hello, objects")
		info, err := s.Put(t.Context(), key, bytes.NewReader(data), int64(len(data)), objectstore.PutOptions{ContentType: "text/plain"})
		require.NoError(t, err)
		require.Equal(t, key, info.Key)
		require.Equal(t, int64(len(data)), info.Size)
		require.Equal(t, data, read(t, s, key, 0, -1))
		st, err := s.Stat(t.Context(), key)
		require.NoError(t, err)
		require.Equal(t, int64(len(data)), st.Size)
		require.False(t, st.Modified.IsZero())
		require.NoError(t, s.Check(t.Context()))
	})

	t.Run("UnknownSizeAndEmpty", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		key := mustKey(t, "assets", "unknown")
		data := random(t, 300<<10)
		info, err := s.Put(t.Context(), key, onlyReader{bytes.NewReader(data)}, -1, objectstore.PutOptions{})
		require.NoError(t, err)
		require.Equal(t, int64(len(data)), info.Size)
		require.Equal(t, data, read(t, s, key, 0, -1))

		empty := mustKey(t, "assets", "empty")
		info, err = s.Put(t.Context(), empty, strings.NewReader(""), 0, objectstore.PutOptions{})
		require.NoError(t, err)
		require.Zero(t, info.Size)
		require.Empty(t, read(t, s, empty, 0, -1))
		require.Empty(t, read(t, s, empty, 0, 0))
	})

	// Larger than one S3 part (8 MiB), so S3 takes the multipart path, with
	// a known and an unknown size.
	t.Run("Large", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		data := random(t, 9<<20+123)
		for _, size := range []int64{int64(len(data)), -1} {
			key := mustKey(t, "assets", "large")
			_, err := s.Put(t.Context(), key, onlyReader{bytes.NewReader(data)}, size, objectstore.PutOptions{Limit: 10 << 20})
			require.NoError(t, err, "size %d", size)
			require.True(t, bytes.Equal(data, read(t, s, key, 0, -1)), "size %d", size)
			require.Equal(t, data[8<<20-5:8<<20+5], read(t, s, key, 8<<20-5, 10), "a range across the part boundary")
		}
	})

	t.Run("Ranges", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		key := mustKey(t, "assets", "range")
		data := []byte("0123456789abcdef")
		_, err := s.Put(t.Context(), key, bytes.NewReader(data), -1, objectstore.PutOptions{})
		require.NoError(t, err)
		for _, c := range []struct{ off, n int64 }{{0, 1}, {0, 16}, {5, 3}, {15, 1}, {10, -1}, {0, -1}, {3, 0}, {14, 100}} {
			want := data[c.off:]
			if c.n >= 0 && c.off+c.n < int64(len(data)) {
				want = data[c.off : c.off+c.n]
			}
			require.Equal(t, want, read(t, s, key, c.off, c.n), "offset %d length %d", c.off, c.n)
		}
		for _, c := range []struct{ off, n int64 }{{16, -1}, {16, 1}, {17, 2}, {100, 0}, {-1, 2}, {0, -2}} {
			_, err := s.Get(t.Context(), key, c.off, c.n)
			require.ErrorIs(t, err, objectstore.ErrInvalidRange, "offset %d length %d", c.off, c.n)
		}
	})

	t.Run("Replace", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		key := mustKey(t, "checkpoints", "run_1")
		for _, v := range []string{"first version", "second"} {
			_, err := s.Put(t.Context(), key, strings.NewReader(v), int64(len(v)), objectstore.PutOptions{})
			require.NoError(t, err)
			require.Equal(t, v, string(read(t, s, key, 0, -1)))
		}
	})

	t.Run("MissingAndDelete", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		key := mustKey(t, "assets", "gone")
		_, err := s.Get(t.Context(), key, 0, -1)
		require.ErrorIs(t, err, objectstore.ErrNotFound)
		_, err = s.Get(t.Context(), key, 2, 3)
		require.ErrorIs(t, err, objectstore.ErrNotFound)
		_, err = s.Stat(t.Context(), key)
		require.ErrorIs(t, err, objectstore.ErrNotFound)
		require.NoError(t, s.Delete(t.Context(), key), "deleting a missing object is not an error")

		_, err = s.Put(t.Context(), key, strings.NewReader("x"), 1, objectstore.PutOptions{})
		require.NoError(t, err)
		require.NoError(t, s.Delete(t.Context(), key))
		_, err = s.Stat(t.Context(), key)
		require.ErrorIs(t, err, objectstore.ErrNotFound)
		require.NoError(t, s.Delete(t.Context(), key), "deleting twice")
		// A key that is a "directory" of other keys is no object either.
		_, err = s.Put(t.Context(), mustKey(t, "assets", "dir", "child"), strings.NewReader("x"), 1, objectstore.PutOptions{})
		require.NoError(t, err)
		_, err = s.Stat(t.Context(), mustKey(t, "assets", "dir"))
		require.ErrorIs(t, err, objectstore.ErrNotFound)
	})

	// Every failed Put leaves nothing under its key, and a previous object
	// there untouched.
	failures := []struct {
		name  string
		size  int64
		limit int64
		r     func(t *testing.T) io.Reader
		want  error
	}{
		{name: "LimitExceededUnknownSize", size: -1, limit: 1000, r: fixed(1001), want: objectstore.ErrTooLarge},
		{name: "LimitExceededAnnounced", size: 1001, limit: 1000, r: fixed(1001), want: objectstore.ErrTooLarge},
		{name: "LimitExceededAfterParts", size: -1, limit: 9 << 20, r: fixed(9<<20 + 1), want: objectstore.ErrTooLarge},
		{name: "LongerThanAnnouncedLarge", size: 10 << 20, limit: 20 << 20, r: fixed(11 << 20), want: objectstore.ErrSizeMismatch},
		{name: "ShortOfAnnounced", size: 2000, r: fixed(1500), want: objectstore.ErrSizeMismatch},
		{name: "LongerThanAnnounced", size: 1000, r: fixed(1500), want: objectstore.ErrSizeMismatch},
		{name: "CutOffSmall", size: 4096, r: cutOff(1000), want: io.ErrUnexpectedEOF},
		{name: "CutOffUnknownSize", size: -1, r: cutOff(1000), want: io.ErrUnexpectedEOF},
		{name: "CutOffAfterParts", size: -1, r: cutOff(9 << 20), want: io.ErrUnexpectedEOF},
		{name: "CutOffLargeKnown", size: 12 << 20, r: cutOff(9 << 20), want: io.ErrUnexpectedEOF},
	}
	for _, f := range failures {
		t.Run("Failed"+f.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			key := mustKey(t, "assets", "failed")
			_, err := s.Put(t.Context(), key, f.r(t), f.size, objectstore.PutOptions{Limit: f.limit})
			require.ErrorIs(t, err, f.want)
			_, err = s.Stat(t.Context(), key)
			require.ErrorIs(t, err, objectstore.ErrNotFound, "a failed Put stored something")

			_, err = s.Put(t.Context(), key, strings.NewReader("kept"), 4, objectstore.PutOptions{})
			require.NoError(t, err)
			_, err = s.Put(t.Context(), key, f.r(t), f.size, objectstore.PutOptions{Limit: f.limit})
			require.ErrorIs(t, err, f.want)
			require.Equal(t, "kept", string(read(t, s, key, 0, -1)), "a failed Put replaced the object")
			if hooks.NoLeftovers != nil {
				hooks.NoLeftovers(t, s)
			}
		})
	}

	t.Run("CanceledMidway", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		key := mustKey(t, "assets", "canceled")
		ctx, cancel := context.WithCancel(t.Context())
		r := &cancelingReader{r: bytes.NewReader(random(t, 2<<20)), after: 1 << 20, cancel: cancel}
		_, err := s.Put(ctx, key, r, -1, objectstore.PutOptions{})
		require.ErrorIs(t, err, context.Canceled)
		_, err = s.Stat(t.Context(), key)
		require.ErrorIs(t, err, objectstore.ErrNotFound)
		if hooks.NoLeftovers != nil {
			hooks.NoLeftovers(t, s)
		}
	})

	t.Run("InvalidKeys", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		for _, key := range InvalidKeys {
			_, err := s.Put(t.Context(), key, strings.NewReader("x"), 1, objectstore.PutOptions{})
			require.ErrorIs(t, err, objectstore.ErrInvalidKey, "put %q", key)
			_, err = s.Get(t.Context(), key, 0, -1)
			require.ErrorIs(t, err, objectstore.ErrInvalidKey, "get %q", key)
			_, err = s.Stat(t.Context(), key)
			require.ErrorIs(t, err, objectstore.ErrInvalidKey, "stat %q", key)
			require.ErrorIs(t, s.Delete(t.Context(), key), objectstore.ErrInvalidKey, "delete %q", key)
		}
	})

	// Concurrent writers of one key: the object is one of them, whole.
	t.Run("ConcurrentPuts", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		key := mustKey(t, "checkpoints", "same")
		versions := make([][]byte, 4)
		errs := make([]error, len(versions))
		var wg sync.WaitGroup
		for i := range versions {
			versions[i] = bytes.Repeat([]byte{byte('a' + i)}, 256<<10)
			wg.Go(func() {
				_, errs[i] = s.Put(t.Context(), key, bytes.NewReader(versions[i]), int64(len(versions[i])), objectstore.PutOptions{})
			})
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		got := read(t, s, key, 0, -1)
		found := false
		for _, v := range versions {
			found = found || bytes.Equal(got, v)
		}
		require.True(t, found, "the object mixes writers")
	})
}

// InvalidKeys are keys every store refuses.
var InvalidKeys = []string{
	"", "/ws/a/b", "ws", "ws/a", "assets/a/b", "ws/../b", "ws/a/../b", "ws/a/b/..", "ws/a/./b",
	"ws//b", "ws/a//b", "ws/a/b/", `ws/a\b`, `ws\a\b`, "ws/a/b\x00", "ws/a/.hidden", "ws/a/%2e%2e",
	"ws/a/b c", "ws/a/caf\u00e9", "ws/a/" + strings.Repeat("x", 600), "../../etc/passwd", "ws/a/b\n",
}

func mustKey(t *testing.T, parts ...string) string {
	t.Helper()
	key, err := objectstore.Key("ws_test", parts...)
	require.NoError(t, err)
	return key
}

func read(t *testing.T, s objectstore.Store, key string, off, n int64) []byte {
	t.Helper()
	r, err := s.Get(t.Context(), key, off, n)
	require.NoError(t, err)
	defer r.Close()
	b, err := io.ReadAll(r)
	require.NoError(t, err)
	return b
}

func random(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return b
}

// fixed returns a reader of n bytes that hides every interface but Read.
func fixed(n int) func(t *testing.T) io.Reader {
	return func(t *testing.T) io.Reader { return onlyReader{bytes.NewReader(random(t, n))} }
}

// cutOff returns a reader that fails with io.ErrUnexpectedEOF after n bytes,
// as a request body does when the client goes away.
func cutOff(n int) func(t *testing.T) io.Reader {
	return func(t *testing.T) io.Reader {
		return io.MultiReader(onlyReader{bytes.NewReader(random(t, n))}, errReader{io.ErrUnexpectedEOF})
	}
}

type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// cancelingReader cancels its context once after bytes were read, then goes on.
type cancelingReader struct {
	r      io.Reader
	after  int
	n      int
	cancel context.CancelFunc
}

func (c *cancelingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	if c.n >= c.after {
		c.cancel()
	}
	return n, err
}
