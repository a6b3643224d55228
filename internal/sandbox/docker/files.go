package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/svcdev/svc/internal/sandbox"
)

// maxLinkHops bounds the symbolic links followed to reach a file.
const maxLinkHops = 8

// pathStat is the engine's X-Docker-Container-Path-Stat header (base64 JSON).
type pathStat struct {
	Name       string      `json:"name"`
	Size       int64       `json:"size"`
	Mode       fs.FileMode `json:"mode"`
	MTime      time.Time   `json:"mtime"`
	LinkTarget string      `json:"linkTarget"`
}

// stat reads the stat of an absolute container path (HEAD .../archive). A
// missing path is ErrNotFound; a missing container ErrGone.
func (in *Instance) stat(ctx context.Context, p string) (pathStat, error) {
	ctx, cancel := context.WithTimeout(ctx, in.e.callTimeout)
	defer cancel()
	resp, err := in.e.send(ctx, "stat path", http.MethodHead, "/containers/"+in.id+"/archive", url.Values{"path": {p}}, nil, "")
	if err != nil {
		return pathStat{}, err
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusOK {
		return pathStat{}, archiveError("stat path", resp)
	}
	return decodeStat(resp.Header.Get("X-Docker-Container-Path-Stat"))
}

func decodeStat(h string) (pathStat, error) {
	var st pathStat
	b, err := base64.StdEncoding.DecodeString(h)
	if err != nil || json.Unmarshal(b, &st) != nil {
		return st, &Error{Op: "stat path", Message: "the engine's path stat is malformed"}
	}
	return st, nil
}

// archiveError maps an archive endpoint's error answer: 404 is a missing
// container (ErrGone) or a missing path (ErrNotFound). A HEAD answer has no
// body; its 404 is told apart by a second look at the container.
func archiveError(op string, resp *http.Response) error {
	de := engineError(op, resp)
	if resp.StatusCode != http.StatusNotFound {
		return de
	}
	if strings.HasPrefix(strings.ToLower(de.Message), "no such container") {
		return de.withCause(sandbox.ErrGone)
	}
	return de.withCause(sandbox.ErrNotFound)
}

// resolve stats p, following symbolic links (the engine reports a link's
// target fully resolved inside the container, or relative to the link).
func (in *Instance) resolve(ctx context.Context, p string) (pathStat, string, error) {
	for range maxLinkHops {
		st, err := in.stat(ctx, p)
		if errors.Is(err, sandbox.ErrNotFound) && resp404IsContainer(ctx, in) {
			return st, p, fmt.Errorf("envdocker: %s: %w", p, sandbox.ErrGone)
		}
		if err != nil {
			return st, p, err
		}
		if st.Mode&fs.ModeSymlink == 0 {
			return st, p, nil
		}
		if st.LinkTarget == "" {
			return st, p, &Error{Op: "stat path", Message: "the engine gave no target for a symbolic link"}
		}
		if path.IsAbs(st.LinkTarget) {
			p = path.Clean(st.LinkTarget)
		} else {
			p = path.Join(path.Dir(p), st.LinkTarget)
		}
	}
	return pathStat{}, p, &Error{Op: "stat path", Message: "too many levels of symbolic links"}
}

// resp404IsContainer reports whether the container itself is gone (a HEAD 404
// carries no message to tell).
func resp404IsContainer(ctx context.Context, in *Instance) bool {
	_, err := in.e.inspect(ctx, in.id)
	return errors.Is(err, sandbox.ErrGone)
}

// ReadFile reads a file of the working directory, at most limit bytes of it
// (0: sandbox.DefaultReadLimit; capped at sandbox.MaxReadLimit).
func (in *Instance) ReadFile(ctx context.Context, name string, limit int64) (sandbox.File, error) {
	if err := in.expired(); err != nil {
		return sandbox.File{}, err
	}
	if limit <= 0 {
		limit = sandbox.DefaultReadLimit
	}
	limit = min(limit, sandbox.MaxReadLimit)
	p, err := in.abs(name)
	if err != nil {
		return sandbox.File{}, err
	}
	st, p, err := in.resolve(ctx, p)
	if err != nil {
		return sandbox.File{}, wrapPath("read", name, err)
	}
	if !st.Mode.IsRegular() {
		return sandbox.File{}, fmt.Errorf("envdocker: read %q: not a regular file", name)
	}
	ctx, cancel := context.WithTimeout(ctx, in.e.callTimeout)
	defer cancel()
	resp, err := in.e.send(ctx, "read file", http.MethodGet, "/containers/"+in.id+"/archive", url.Values{"path": {p}}, nil, "")
	if err != nil {
		return sandbox.File{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return sandbox.File{}, wrapPath("read", name, archiveError("read file", resp))
	}
	tr := tar.NewReader(resp.Body)
	hdr, err := tr.Next()
	if err != nil || hdr.Typeflag != tar.TypeReg {
		return sandbox.File{}, &Error{Op: "read file", Message: "the engine's archive does not hold the file"}
	}
	var buf bytes.Buffer
	if _, err := io.CopyN(&buf, tr, min(limit, hdr.Size)); err != nil {
		return sandbox.File{}, &Error{Op: "read file", Message: "the engine's archive broke off"}
	}
	return sandbox.File{Data: buf.Bytes(), Size: hdr.Size, Truncated: hdr.Size > limit}, nil
}

// WriteFile writes data to a file of the working directory, creating missing
// parent directories, in one archive upload: the engine removes what was
// there and writes the new file, so a reader may briefly see it missing or
// short, never a mix of two writes made through this Instance (they are
// serialised). Files and directories are owned by the container's user
// (copyUIDGID); a directory is never replaced by a file.
func (in *Instance) WriteFile(ctx context.Context, name string, data []byte) error {
	if err := in.expired(); err != nil {
		return err
	}
	in.writeMu.Lock()
	defer in.writeMu.Unlock()
	if len(data) > sandbox.MaxWriteBytes {
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, len(data), sandbox.MaxWriteBytes)
	}
	p, err := in.abs(name)
	if err != nil {
		return err
	}
	if p == in.workdir {
		return fmt.Errorf("%w: %q names the working directory, not a file", sandbox.ErrPath, name)
	}
	// Find the deepest existing ancestor; the archive creates what is missing.
	parent, base := path.Dir(p), path.Base(p)
	var missing []string
	for {
		st, resolved, err := in.resolve(ctx, parent)
		if err == nil {
			if !st.Mode.IsDir() {
				return fmt.Errorf("envdocker: write %q: %s is not a directory", name, strings.TrimPrefix(parent, in.workdir+"/"))
			}
			parent = resolved
			break
		}
		if !errors.Is(err, sandbox.ErrNotFound) || parent == in.workdir {
			return wrapPath("write", name, err)
		}
		missing = append([]string{path.Base(parent)}, missing...)
		parent = path.Dir(parent)
	}
	body, err := fileArchive(missing, base, data, in.now())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, in.e.callTimeout)
	defer cancel()
	q := url.Values{"path": {parent}, "noOverwriteDirNonDir": {"1"}, "copyUIDGID": {"1"}}
	resp, err := in.e.send(ctx, "write file", http.MethodPut, "/containers/"+in.id+"/archive", q, bytes.NewReader(body), "application/x-tar")
	if err != nil {
		return err
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusOK {
		return wrapPath("write", name, archiveError("write file", resp))
	}
	return nil
}

// fileArchive is a tar of the missing directories and the file.
func fileArchive(dirs []string, base string, data []byte, now time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i := range dirs {
		hdr := &tar.Header{Typeflag: tar.TypeDir, Name: path.Join(dirs[:i+1]...) + "/", Mode: 0o755, ModTime: now}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("envdocker: build archive: %w", err)
		}
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: path.Join(append(slices.Clone(dirs), base)...), Mode: 0o644, Size: int64(len(data)), ModTime: now}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, fmt.Errorf("envdocker: build archive: %w", err)
	}
	if _, err := tw.Write(data); err != nil {
		return nil, fmt.Errorf("envdocker: build archive: %w", err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("envdocker: build archive: %w", err)
	}
	return buf.Bytes(), nil
}

// List lists a directory of the working directory, sorted by name, at most
// sandbox.MaxListEntries entries. The engine sends the directory's whole
// tree as an archive; only the headers are read, and reading stops once the
// limit is reached.
func (in *Instance) List(ctx context.Context, dir string) ([]sandbox.Entry, error) {
	if err := in.expired(); err != nil {
		return nil, err
	}
	p, err := in.abs(dir)
	if err != nil {
		return nil, err
	}
	st, p, err := in.resolve(ctx, p)
	if err != nil {
		return nil, wrapPath("list", dir, err)
	}
	if !st.Mode.IsDir() {
		return nil, fmt.Errorf("envdocker: list %q: not a directory", dir)
	}
	ctx, cancel := context.WithTimeout(ctx, in.e.callTimeout)
	defer cancel()
	resp, err := in.e.send(ctx, "list directory", http.MethodGet, "/containers/"+in.id+"/archive", url.Values{"path": {p}}, nil, "")
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, wrapPath("list", dir, archiveError("list directory", resp))
	}
	entries, err := directChildren(tar.NewReader(resp.Body))
	if err != nil {
		return nil, err
	}
	slices.SortFunc(entries, func(a, b sandbox.Entry) int { return strings.Compare(a.Name, b.Name) })
	return entries, nil
}

// directChildren reads an archive of one directory (every name starts with
// the directory's own name) and returns its direct members.
func directChildren(tr *tar.Reader) ([]sandbox.Entry, error) {
	var out []sandbox.Entry
	for len(out) < sandbox.MaxListEntries {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, &Error{Op: "list directory", Message: "the engine's archive broke off"}
		}
		_, rest, ok := strings.Cut(strings.TrimPrefix(hdr.Name, "./"), "/")
		rest = strings.TrimSuffix(rest, "/")
		if !ok || rest == "" || strings.Contains(rest, "/") {
			continue // the directory itself, or deeper
		}
		out = append(out, sandbox.Entry{
			Name: rest, Dir: hdr.Typeflag == tar.TypeDir,
			Size: sizeOf(hdr), MTime: hdr.ModTime.UTC(),
		})
	}
	return out, nil
}

func sizeOf(hdr *tar.Header) int64 {
	if hdr.Typeflag == tar.TypeReg {
		return hdr.Size
	}
	return 0
}

// wrapPath adds the caller's name to an error that does not carry it.
func wrapPath(op, name string, err error) error {
	return fmt.Errorf("envdocker: %s %q: %w", op, name, err)
}
