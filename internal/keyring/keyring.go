package keyring

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/svcdev/svc/internal/jsonguard"
)

const (
	// fileVersion is the only ring file format version this package reads and writes.
	fileVersion = 1
	// keySize is the AES-256 key length in bytes.
	keySize = 32
	// idPrefix starts every key id.
	idPrefix = "k_"
	// idLen is len(idPrefix) plus a 26-character ULID.
	idLen = len(idPrefix) + ulid.EncodedSize
	// maxFileSize bounds what Load reads; a real ring is a few hundred bytes per key.
	maxFileSize = 1 << 20
)

// Ring is a loaded, validated key ring. It is immutable and safe for
// concurrent use.
type Ring struct {
	primary string
	keys    map[string]cipher.AEAD
}

// fileKey and ringFile mirror the on-disk JSON format documented in the package doc.
type fileKey struct {
	ID        string `json:"id"`
	Primary   bool   `json:"primary,omitempty"`
	CreatedAt string `json:"created_at,omitempty"`
	Secret    string `json:"secret"`
}

type ringFile struct {
	Version int       `json:"version"`
	Keys    []fileKey `json:"keys"`
}

// Generate writes a new key ring to path holding a single primary key made
// from crypto/rand. The file is created with mode 0600 and synced to disk. It
// never overwrites anything: if path exists (even as a dangling symlink) it
// returns an error wrapping fs.ErrExist, because an existing ring may hold the
// only copy of the keys that open stored secrets.
func Generate(path string) error {
	k, err := newKey(time.Now())
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(ringFile{Version: fileVersion, Keys: []fileKey{k}}, "", "  ")
	if err != nil {
		return fmt.Errorf("keyring: encode: %w", err)
	}
	data = append(data, '\n')

	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("keyring: %s already exists; refusing to overwrite an existing key ring "+
				"(it may hold the only keys that open stored secrets): %w", path, fs.ErrExist)
		}
		return fmt.Errorf("keyring: create %s: %w", path, err)
	}
	// From here on the file is ours: remove it on any failure so a retry is possible
	// and no half-written ring is left behind.
	if err := writeSynced(f, data); err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("keyring: write %s: %w", path, err)
	}
	// Make the new directory entry durable too. Some filesystems do not support
	// syncing a directory; the file itself is already synced, so ignore that.
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// writeSynced writes data to f, forces mode 0600 regardless of the umask, syncs
// and closes f.
func writeSynced(f *os.File, data []byte) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Chmod(0o600)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// newKey makes a fresh primary key entry with a ULID-based id.
func newKey(now time.Time) (fileKey, error) {
	secret := make([]byte, keySize)
	if _, err := rand.Read(secret); err != nil {
		return fileKey{}, fmt.Errorf("keyring: read random key: %w", err)
	}
	id, err := ulid.New(ulid.Timestamp(now), rand.Reader)
	if err != nil {
		return fileKey{}, fmt.Errorf("keyring: make key id: %w", err)
	}
	return fileKey{
		ID:        idPrefix + strings.ToLower(id.String()),
		Primary:   true,
		CreatedAt: now.UTC().Format(time.RFC3339),
		Secret:    base64.StdEncoding.EncodeToString(secret),
	}, nil
}

// Load reads and validates the key ring at path. Every error names the file
// and the problem; no secret material ever appears in an error.
func Load(path string) (*Ring, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("keyring: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("keyring: read %s: %w", path, err)
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("keyring: %s: file is larger than %d bytes; not a key ring", path, maxFileSize)
	}
	r, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("keyring: %s: %w", path, err)
	}
	return r, nil
}

// parse validates a ring document and builds the ciphers.
func parse(data []byte) (*Ring, error) {
	// jsonguard refuses duplicate keys and trailing data, which encoding/json
	// would silently accept (a second "primary" member would win unnoticed).
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("file is empty")
	}
	if err := jsonguard.Check(data); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var rf ringFile
	if err := dec.Decode(&rf); err != nil {
		return nil, fmt.Errorf("invalid key ring: %w", err)
	}
	if rf.Version != fileVersion {
		return nil, fmt.Errorf("unsupported version %d (want %d)", rf.Version, fileVersion)
	}
	if len(rf.Keys) == 0 {
		return nil, errors.New("no keys")
	}

	r := &Ring{keys: make(map[string]cipher.AEAD, len(rf.Keys))}
	for i, k := range rf.Keys {
		if k.ID == "" {
			return nil, fmt.Errorf("key #%d: missing id", i+1)
		}
		if !validID(k.ID) {
			return nil, fmt.Errorf("key #%d: id %q is not k_ followed by a 26-character lowercase ULID", i+1, truncate(k.ID))
		}
		if _, dup := r.keys[k.ID]; dup {
			return nil, fmt.Errorf("key %s appears more than once", k.ID)
		}
		if k.CreatedAt != "" {
			if _, err := time.Parse(time.RFC3339, k.CreatedAt); err != nil {
				return nil, fmt.Errorf("key %s: created_at %q is not an RFC 3339 time", k.ID, truncate(k.CreatedAt))
			}
		}
		secret, err := base64.StdEncoding.Strict().DecodeString(k.Secret)
		if err != nil {
			return nil, fmt.Errorf("key %s: secret is not valid standard base64", k.ID)
		}
		if len(secret) != keySize {
			return nil, fmt.Errorf("key %s: secret is %d bytes, want %d", k.ID, len(secret), keySize)
		}
		aead, err := newAEAD(secret)
		if err != nil {
			return nil, fmt.Errorf("key %s: %w", k.ID, err)
		}
		clear(secret)
		r.keys[k.ID] = aead
		if k.Primary {
			if r.primary != "" {
				return nil, fmt.Errorf("more than one primary key (%s and %s); mark exactly one primary", r.primary, k.ID)
			}
			r.primary = k.ID
		}
	}
	if r.primary == "" {
		return nil, errors.New("no primary key; mark exactly one key \"primary\": true")
	}
	return r, nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// PrimaryID returns the id of the key that Seal uses.
func (r *Ring) PrimaryID() string { return r.primary }

// validID reports whether id is "k_" plus a canonical lowercase ULID.
func validID(id string) bool {
	if len(id) != idLen || id[:len(idPrefix)] != idPrefix {
		return false
	}
	for i := len(idPrefix); i < len(id); i++ {
		if !isCrockfordLower(id[i]) {
			return false
		}
	}
	// ParseStrict also rejects values above the 128-bit range (first char > '7').
	_, err := ulid.ParseStrict(id[len(idPrefix):])
	return err == nil
}

// isCrockfordLower reports whether c is in the lowercase Crockford base32
// alphabet used by ULIDs (digits and letters except i, l, o, u).
func isCrockfordLower(c byte) bool {
	switch {
	case c >= '0' && c <= '9':
		return true
	case c >= 'a' && c <= 'z':
		return c != 'i' && c != 'l' && c != 'o' && c != 'u'
	}
	return false
}

// truncate keeps error messages short when echoing file content.
func truncate(s string) string {
	const max = 40
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}
