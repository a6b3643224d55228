package local

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
)

// File-tool bounds.
const (
	// DefaultReadLimit is ReadFile's limit when the caller passes 0.
	DefaultReadLimit = 1 << 20
	// MaxReadLimit caps any ReadFile limit.
	MaxReadLimit = 16 << 20
	// MaxWriteBytes caps WriteFile's data.
	MaxWriteBytes = 16 << 20
	// MaxListEntries caps List.
	MaxListEntries = 1000
)

// ErrOutside is returned for a path that is absolute or leaves the working
// folder (through `..` or a symbolic link pointing out).
var ErrOutside = errors.New("envlocal: path outside the working folder")

// ErrTooLarge is returned by WriteFile for data over MaxWriteBytes.
var ErrTooLarge = errors.New("envlocal: file too large")

// cleanName checks a caller's path: relative, slash-separated, no NUL, not
// leaving the folder lexically. Escapes through symbolic links are left to
// os.Root, which refuses them at every component.
func cleanName(name string) (string, error) {
	if name == "" {
		name = "."
	}
	if strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("%w: %q", ErrOutside, name)
	}
	if path.IsAbs(name) {
		return "", fmt.Errorf("%w: %q is absolute", ErrOutside, name)
	}
	if c := path.Clean(name); c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("%w: %q", ErrOutside, name)
	}
	return name, nil
}

// rootErr maps os.Root's refusal of an escaping path to ErrOutside.
func rootErr(op, name string, err error) error {
	if isEscape(err) {
		return fmt.Errorf("%w: %s %q", ErrOutside, op, name)
	}
	return fmt.Errorf("envlocal: %s %q: %w", op, name, err)
}

// isEscape recognises os.Root's "path escapes from parent" error, which has
// no exported sentinel.
func isEscape(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "escapes")
}

// ReadResult is a file read by ReadFile.
type ReadResult struct {
	Data []byte
	// Size is the file's size in bytes.
	Size int64
	// Truncated is set when Data holds only the first limit bytes.
	Truncated bool
}

// ReadFile reads up to limit bytes (0 means DefaultReadLimit; capped at
// MaxReadLimit) of a regular file in the working folder.
func (e *Env) ReadFile(name string, limit int64) (ReadResult, error) {
	name, err := cleanName(name)
	if err != nil {
		return ReadResult{}, err
	}
	if limit <= 0 {
		limit = DefaultReadLimit
	}
	limit = min(limit, MaxReadLimit)
	f, err := e.root.Open(name)
	if err != nil {
		return ReadResult{}, rootErr("read", name, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ReadResult{}, rootErr("read", name, err)
	}
	if !st.Mode().IsRegular() {
		return ReadResult{}, fmt.Errorf("envlocal: read %q: not a regular file", name)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return ReadResult{}, rootErr("read", name, err)
	}
	res := ReadResult{Data: data, Size: st.Size()}
	if int64(len(data)) > limit {
		res.Data, res.Truncated = data[:limit], true
	}
	return res, nil
}

// WriteFile replaces (or creates) a file in the working folder atomically: the
// data goes to a temporary file in the same directory, which is synced and
// renamed over the target, so a reader sees the old or the new content, never
// a mix. Missing parent directories are created (0700); the file is 0600.
func (e *Env) WriteFile(name string, data []byte) error {
	name, err := cleanName(name)
	if err != nil {
		return err
	}
	if len(data) > MaxWriteBytes {
		return fmt.Errorf("%w: %d bytes (at most %d)", ErrTooLarge, len(data), MaxWriteBytes)
	}
	if dir := path.Dir(name); dir != "." {
		if err := e.root.MkdirAll(dir, 0o700); err != nil {
			return rootErr("write", name, err)
		}
	}
	tmp := path.Join(path.Dir(name), ".svc-tmp-"+randomSuffix())
	f, err := e.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return rootErr("write", name, err)
	}
	if err := writeAndSync(f, data); err != nil {
		_ = e.root.Remove(tmp)
		return rootErr("write", name, err)
	}
	if err := e.root.Rename(tmp, name); err != nil {
		_ = e.root.Remove(tmp)
		return rootErr("write", name, err)
	}
	return nil
}

func writeAndSync(f *os.File, data []byte) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Entry is one directory entry listed by List.
type Entry struct {
	Name    string
	IsDir   bool
	Symlink bool
	Size    int64
	Mode    fs.FileMode
}

// Listing is a directory's entries in name order.
type Listing struct {
	Entries []Entry
	// Truncated is set when the directory has more than MaxListEntries entries.
	Truncated bool
}

// List lists a directory of the working folder ("" or "." for the folder itself).
// Symbolic links are listed, not followed.
func (e *Env) List(dir string) (Listing, error) {
	dir, err := cleanName(dir)
	if err != nil {
		return Listing{}, err
	}
	f, err := e.root.Open(dir)
	if err != nil {
		return Listing{}, rootErr("list", dir, err)
	}
	defer f.Close()
	des, err := f.ReadDir(MaxListEntries + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return Listing{}, rootErr("list", dir, err)
	}
	var out Listing
	if len(des) > MaxListEntries {
		des, out.Truncated = des[:MaxListEntries], true
	}
	for _, de := range des {
		ent := Entry{Name: de.Name(), IsDir: de.IsDir(), Symlink: de.Type()&fs.ModeSymlink != 0}
		if info, err := de.Info(); err == nil {
			ent.Size, ent.Mode = info.Size(), info.Mode()
		}
		out.Entries = append(out.Entries, ent)
	}
	slices.SortFunc(out.Entries, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
