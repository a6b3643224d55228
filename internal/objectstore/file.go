package objectstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// FileStore keeps objects as files under one directory, for a single machine:
// the key ws/a/assets/b is the file DIR/ws/a/assets/b.
//
// A Put writes a temporary file next to its target (".<name>.tmp-<random>",
// a name no key can have), syncs it, renames it over the target and syncs the
// directory, so a reader or a crash sees the old object or the whole new one,
// never part of one. A crash during a Put can leave a temporary file behind;
// it is never visible as an object (see docs/operations.md).
type FileStore struct {
	dir string
}

// copyBuffer is the size of Put's copy buffer: the memory one upload holds.
const copyBuffer = 256 << 10

// tempMarker is in the name of every temporary file of a Put.
const tempMarker = ".tmp-"

// OpenFile opens (creating when missing) the directory dir as a store.
func OpenFile(dir string) (*FileStore, error) {
	if dir == "" {
		return nil, errors.New("object store: empty directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("object store directory %q: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o750); err != nil {
		return nil, fmt.Errorf("object store directory %q: %w", abs, err)
	}
	return &FileStore{dir: abs}, nil
}

// Dir is the store's absolute directory.
func (s *FileStore) Dir() string { return s.dir }

// Describe implements Store.
func (s *FileStore) Describe() string { return "file://" + s.dir }

// path maps a valid key to its file. ValidateKey admits only '/'-separated
// segments of [A-Za-z0-9._-] not starting with '.', so the result is always
// below s.dir.
func (s *FileStore) path(key string) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	return filepath.Join(s.dir, filepath.FromSlash(key)), nil
}

// Put implements Store.
func (s *FileStore) Put(ctx context.Context, key string, r io.Reader, size int64, opts PutOptions) (Info, error) {
	target, err := s.path(key)
	if err != nil {
		return Info{}, err
	}
	if opts.Limit > 0 && size > opts.Limit {
		return Info{}, ErrTooLarge
	}
	dir := filepath.Dir(target)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return Info{}, fmt.Errorf("put %s: %w", key, err)
	}
	tmp, err := os.OpenFile(filepath.Join(dir, "."+filepath.Base(target)+tempMarker+randomSuffix()), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return Info{}, fmt.Errorf("put %s: %w", key, err)
	}
	done := false
	defer func() {
		if !done {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	g := newGuardedReader(contextReader{ctx: ctx, r: r}, size, opts.Limit)
	// A large buffer cuts the system calls of the default 32 KiB; the
	// writer hides os.File's ReadFrom, which would ignore it.
	n, err := io.CopyBuffer(&writebackWriter{f: tmp}, g, make([]byte, copyBuffer))
	if err == nil {
		err = g.failed()
	}
	if err != nil {
		return Info{}, fmt.Errorf("put %s: %w", key, err)
	}
	if err := tmp.Sync(); err != nil {
		return Info{}, fmt.Errorf("put %s: sync: %w", key, err)
	}
	if err := tmp.Close(); err != nil {
		return Info{}, fmt.Errorf("put %s: close: %w", key, err)
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return Info{}, fmt.Errorf("put %s: rename: %w", key, err)
	}
	done = true
	// The rename is durable once the directory entry is.
	if err := syncDir(dir); err != nil {
		return Info{}, fmt.Errorf("put %s: sync directory: %w", key, err)
	}
	fi, err := os.Stat(target)
	if err != nil {
		return Info{}, fmt.Errorf("put %s: %w", key, err)
	}
	return Info{Key: key, Size: n, Modified: fi.ModTime().UTC()}, nil
}

// Get implements Store.
func (s *FileStore) Get(_ context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	p, err := s.path(key)
	if err != nil {
		return nil, err
	}
	if err := checkRange(offset, length); err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, notFound(key, err)
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, fmt.Errorf("get %s: %w", key, ErrNotFound)
	}
	if offset > 0 && offset >= fi.Size() {
		_ = f.Close()
		return nil, fmt.Errorf("get %s: offset %d of %d bytes: %w", key, offset, fi.Size(), ErrInvalidRange)
	}
	if offset > 0 {
		if _, err := f.Seek(offset, io.SeekStart); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("get %s: %w", key, err)
		}
	}
	if length < 0 {
		return f, nil
	}
	return &limitedFile{Reader: io.LimitReader(f, length), f: f}, nil
}

// Stat implements Store.
func (s *FileStore) Stat(_ context.Context, key string) (Info, error) {
	p, err := s.path(key)
	if err != nil {
		return Info{}, err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return Info{}, notFound(key, err)
	}
	if !fi.Mode().IsRegular() {
		return Info{}, fmt.Errorf("stat %s: %w", key, ErrNotFound)
	}
	return Info{Key: key, Size: fi.Size(), Modified: fi.ModTime().UTC()}, nil
}

// Delete implements Store.
func (s *FileStore) Delete(_ context.Context, key string) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// Check implements Store: the directory exists and this process may write it.
func (s *FileStore) Check(_ context.Context) error {
	fi, err := os.Stat(s.dir)
	if err != nil {
		return fmt.Errorf("object store %s: %w", s.Describe(), err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("object store %s: not a directory", s.Describe())
	}
	if err := syscall.Access(s.dir, 0x2 /* W_OK */); err != nil {
		return fmt.Errorf("object store %s: not writable: %w", s.Describe(), err)
	}
	return nil
}

// IsTemp reports whether a file name is a temporary file of an unfinished Put.
func IsTemp(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, tempMarker)
}

func notFound(key string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("%s: %w", key, ErrNotFound)
	}
	return fmt.Errorf("%s: %w", key, err)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func randomSuffix() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// limitedFile reads a window of a file and closes the file.
type limitedFile struct {
	io.Reader
	f *os.File
}

func (l *limitedFile) Close() error { return l.f.Close() }

// writebackEvery is how much of a Put is written before the kernel is asked
// to start putting it on disk (see startWriteback).
const writebackEvery = 8 << 20

// writebackWriter writes to a file and starts its writeback every
// writebackEvery bytes. It is an io.Writer and nothing more.
type writebackWriter struct {
	f                *os.File
	written, started int64
}

func (w *writebackWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.written += int64(n)
	if w.written-w.started >= writebackEvery {
		startWriteback(w.f, w.started, w.written-w.started)
		w.started = w.written
	}
	return n, err
}

// contextReader fails reads once ctx ends, so a Put whose caller gave up stops
// between reads even when its reader would go on.
type contextReader struct {
	ctx context.Context
	r   io.Reader
}

func (c contextReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
