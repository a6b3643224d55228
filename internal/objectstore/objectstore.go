// Package objectstore keeps svc's bytes: assets (skill packages among
// them) and run checkpoints. One small interface has two
// implementations: a directory for a single machine (file://DIR) and an
// S3-compatible bucket (s3://BUCKET[/PREFIX]).
//
// Both keep the same promises, which the shared test suite in
// objectstoretest checks against each:
//
//   - An object is visible only once it is complete. Put streams its reader
//     and never holds the object in memory; when the reader fails, is cut off,
//     delivers more than the limit or a different number of bytes than
//     announced, nothing is left under the key (a previous object there stays).
//   - Keys are made by the service, never taken from clients, and always name
//     their workspace: ws/<workspace_id>/<kind>/... (see Key). ValidateKey
//     refuses anything else, including traversal, absolute paths, backslashes
//     and NUL, so no key reaches outside its workspace or its store.
//   - A missing object is ErrNotFound; deleting one is not an error, so
//     deletions can be retried (the outbox's checkpoint_cleanup is at least once).
package objectstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
)

// Store is an object store. Implementations are safe for concurrent use.
type Store interface {
	// Put stores the bytes of r under key, replacing any object there, and
	// returns what it stored. size is the exact length when known, else -1.
	// On any error nothing new is visible under key.
	Put(ctx context.Context, key string, r io.Reader, size int64, opts PutOptions) (Info, error)
	// Get opens the bytes [offset, offset+length) of an object; length -1
	// reads to the end, and a window past the end stops at the end. An
	// offset at or past the end (other than 0) is ErrInvalidRange. The
	// caller closes the reader.
	Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error)
	// Stat describes an object.
	Stat(ctx context.Context, key string) (Info, error)
	// Delete removes an object; a missing one is not an error.
	Delete(ctx context.Context, key string) error
	// Check reports whether the store answers and can be written to (the
	// directory exists and is writable; the bucket exists and the
	// credentials reach it). Readiness and start-up use it.
	Check(ctx context.Context) error
	// Describe names the store for logs, without credentials.
	Describe() string
}

// PutOptions qualify a Put.
type PutOptions struct {
	// Limit is the most bytes the object may have; more fail with
	// ErrTooLarge. 0 means no limit.
	Limit int64
	// ContentType is recorded with the object where the store can (S3).
	ContentType string
}

// Info describes a stored object.
type Info struct {
	Key  string
	Size int64
	// Modified is when the object was written.
	Modified time.Time
}

// Errors of the store; test for them with errors.Is.
var (
	// ErrNotFound: no object under the key.
	ErrNotFound = errors.New("object not found")
	// ErrTooLarge: the reader delivered more than PutOptions.Limit bytes.
	ErrTooLarge = errors.New("object exceeds the size limit")
	// ErrInvalidKey: the key is not one the service makes.
	ErrInvalidKey = errors.New("invalid object key")
	// ErrSizeMismatch: the reader ended before, or went past, the size Put
	// was told.
	ErrSizeMismatch = errors.New("object size differs from the announced size")
	// ErrInvalidRange: Get was asked for a negative offset or length.
	ErrInvalidRange = errors.New("invalid byte range")
)

// maxKeyBytes keeps keys well inside S3's 1024-byte limit, with room for a
// bucket prefix.
const maxKeyBytes = 512

// segmentPattern is one path segment of a key: ASCII letters, digits, '.',
// '_' and '-', not starting with '.' (so "." and ".." are impossible, and the
// file store's temporary ".name.tmp-*" files never collide with a key).
var segmentPattern = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$`)

// ValidateKey accepts exactly the keys Key makes: "ws", a workspace id and at
// least one more segment, joined by '/', each segment from segmentPattern.
// Everything else is ErrInvalidKey: empty keys, absolute paths, "..", "//",
// backslashes, NUL and any other byte outside the pattern.
func ValidateKey(key string) error {
	if key == "" || len(key) > maxKeyBytes {
		return fmt.Errorf("%w: must be 1 to %d bytes", ErrInvalidKey, maxKeyBytes)
	}
	parts := strings.Split(key, "/")
	if len(parts) < 3 || parts[0] != "ws" {
		return fmt.Errorf("%w: must start with ws/<workspace_id>/", ErrInvalidKey)
	}
	for _, p := range parts[1:] {
		if !segmentPattern.MatchString(p) {
			return fmt.Errorf("%w: segment %q", ErrInvalidKey, p)
		}
	}
	return nil
}

// Key builds the key of an object of a workspace: ws/<workspaceID>/<parts...>,
// e.g. Key("ws_01…", "assets", "as_01…"). It fails when the result is not a
// valid key, so an id carrying '/' or ".." can never steer a key elsewhere.
func Key(workspaceID string, parts ...string) (string, error) {
	key := "ws/" + workspaceID + "/" + strings.Join(parts, "/")
	if len(parts) == 0 {
		key = "ws/" + workspaceID
	}
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	return key, nil
}

// checkRange validates the arguments of Get.
func checkRange(offset, length int64) error {
	if offset < 0 || length < -1 {
		return fmt.Errorf("%w: offset %d, length %d", ErrInvalidRange, offset, length)
	}
	return nil
}

// guardedReader counts what Put reads: it fails with ErrTooLarge once more
// than limit bytes came, and with ErrSizeMismatch when the reader ends short
// of, or goes past, an announced size. It turns "the whole object arrived"
// into a reader that reaches io.EOF only then.
type guardedReader struct {
	r     io.Reader
	limit int64 // 0: none
	size  int64 // -1: unknown
	n     int64
	err   error
}

func newGuardedReader(r io.Reader, size int64, limit int64) *guardedReader {
	return &guardedReader{r: r, limit: limit, size: size}
}

func (g *guardedReader) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	// Read at most one byte past what is allowed, to see whether more comes.
	allowed := int64(-1)
	if g.limit > 0 {
		allowed = g.limit
	}
	if g.size >= 0 && (allowed < 0 || g.size < allowed) {
		allowed = g.size
	}
	if allowed >= 0 && int64(len(p)) > allowed-g.n+1 {
		p = p[:allowed-g.n+1]
	}
	n, err := g.r.Read(p)
	g.n += int64(n)
	switch {
	case g.limit > 0 && g.n > g.limit:
		g.err = ErrTooLarge
	case g.size >= 0 && g.n > g.size:
		g.err = ErrSizeMismatch
	case err == io.EOF && g.size >= 0 && g.n != g.size:
		g.err = fmt.Errorf("%w: %d bytes announced, %d arrived", ErrSizeMismatch, g.size, g.n)
	case err == io.EOF:
		g.err = err
		return n, err
	case err != nil:
		// Wrapped, so that no client library mistakes a reader's
		// io.ErrUnexpectedEOF (a cut-off request body) for the end of the
		// object and completes the upload with what came.
		g.err = fmt.Errorf("reading the object: %w", err)
		return n, g.err
	default:
		return n, nil
	}
	return 0, g.err
}

// failed reports the error that ended the read, if it was not io.EOF.
func (g *guardedReader) failed() error {
	if g.err == io.EOF {
		return nil
	}
	return g.err
}
