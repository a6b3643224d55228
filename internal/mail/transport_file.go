package mail

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// fileTransport writes one RFC 5322 file per delivery, <delivery id>.eml, into
// a directory only the service's user can read (the files hold live links).
// A file appears whole or not at all: it is written to a temporary name in the
// same directory, synced, and renamed. A redelivery replaces its file.
type fileTransport struct {
	dir string
}

// newFileTransport creates dir (mode 0700) if it is missing, so that a
// directory the process cannot create fails at startup, not at the first mail.
func newFileTransport(dir string) (*fileTransport, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("mail.file_dir: %w", err)
	}
	return &fileTransport{dir: dir}, nil
}

func (t *fileTransport) send(_ context.Context, e envelope) (string, error) {
	if err := os.MkdirAll(t.dir, 0o700); err != nil {
		return "", fmt.Errorf("create the mail directory: %w", err)
	}
	name := filepath.Join(t.dir, e.DeliveryID+".eml")
	if err := t.write(name, e); err != nil {
		return "", err
	}
	return "written to " + name, nil
}

// write writes e to name atomically. os.CreateTemp makes the file with mode
// 0600.
func (t *fileTransport) write(name string, e envelope) (err error) {
	f, err := os.CreateTemp(t.dir, "."+e.DeliveryID+".*.tmp")
	if err != nil {
		return fmt.Errorf("create a mail file: %w", err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if _, err = e.Msg.WriteTo(f); err != nil {
		return fmt.Errorf("write mail file: %w", err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("sync mail file: %w", err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("close mail file: %w", err)
	}
	if err = os.Rename(f.Name(), name); err != nil {
		return fmt.Errorf("rename mail file: %w", err)
	}
	return syncDir(t.dir)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open the mail directory: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync the mail directory: %w", err)
	}
	return nil
}
