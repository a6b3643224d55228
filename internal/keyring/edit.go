package keyring

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// KeyInfo describes a key of a ring file without its secret.
type KeyInfo struct {
	ID        string `json:"id"`
	Primary   bool   `json:"primary"`
	CreatedAt string `json:"created_at,omitempty"`
}

// List returns the keys of the ring file at path, in file order, without
// their secrets. The file must be a valid ring (see [Load]).
func List(path string) ([]KeyInfo, error) {
	rf, err := readFile(path)
	if err != nil {
		return nil, err
	}
	out := make([]KeyInfo, 0, len(rf.Keys))
	for _, k := range rf.Keys {
		out = append(out, KeyInfo{ID: k.ID, Primary: k.Primary, CreatedAt: k.CreatedAt})
	}
	return out, nil
}

// AddKey appends a new random 256-bit key to the ring file at path, not
// primary (step 1 of a rotation: every process learns the key before any
// seals with it), and returns its id. The file is replaced atomically.
func AddKey(path string) (string, error) {
	rf, err := readFile(path)
	if err != nil {
		return "", err
	}
	k, err := newKey(time.Now())
	if err != nil {
		return "", err
	}
	k.Primary = false
	rf.Keys = append(rf.Keys, k)
	if err := writeFile(path, rf); err != nil {
		return "", err
	}
	return k.ID, nil
}

// ErrNoSuchKey means a key id named by the caller is not in the ring file.
var ErrNoSuchKey = errors.New("keyring: no such key")

// Promote marks key id primary and every other key not primary (step 2 of a
// rotation), replacing the file at path atomically. Promoting the current
// primary changes nothing and leaves the file as it is.
func Promote(path, id string) error {
	rf, err := readFile(path)
	if err != nil {
		return err
	}
	found := false
	for i := range rf.Keys {
		if rf.Keys[i].ID == id {
			found = true
			if rf.Keys[i].Primary {
				return nil
			}
		}
	}
	if !found {
		return fmt.Errorf("%w %q in %s", ErrNoSuchKey, truncate(id), path)
	}
	for i := range rf.Keys {
		rf.Keys[i].Primary = rf.Keys[i].ID == id
	}
	return writeFile(path, rf)
}

// readFile reads and fully validates the ring file at path, returning its
// document form for editing.
func readFile(path string) (ringFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return ringFile{}, fmt.Errorf("keyring: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return ringFile{}, fmt.Errorf("keyring: read %s: %w", path, err)
	}
	if len(data) > maxFileSize {
		return ringFile{}, fmt.Errorf("keyring: %s: file is larger than %d bytes; not a key ring", path, maxFileSize)
	}
	// parse applies every rule of Load; only a valid ring is ever edited.
	if _, err := parse(data); err != nil {
		return ringFile{}, fmt.Errorf("keyring: %s: %w", path, err)
	}
	var rf ringFile
	if err := json.Unmarshal(data, &rf); err != nil {
		return ringFile{}, fmt.Errorf("keyring: %s: %w", path, err)
	}
	return rf, nil
}

// writeFile replaces path with rf atomically: it writes a temporary file in
// the same directory (mode 0600), syncs it, renames it over path and syncs the
// directory. Nothing of the old file (owner, mode, extended attributes) is
// preserved; the result is always mode 0600 and owned by the caller. If path
// is a symbolic link, the link itself is replaced by a regular file.
func writeFile(path string, rf ringFile) error {
	// Validate what is about to be written, so an edit can never produce a
	// ring that Load refuses.
	data, err := json.MarshalIndent(rf, "", "  ")
	if err != nil {
		return fmt.Errorf("keyring: encode: %w", err)
	}
	data = append(data, '\n')
	if _, err := parse(data); err != nil {
		return fmt.Errorf("keyring: refusing to write an invalid ring: %w", err)
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("keyring: create temporary file in %s: %w", dir, err)
	}
	tmp := f.Name()
	if err := writeSynced(f, data); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("keyring: write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("keyring: replace %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}
