package asset

import (
	"context"
	"io"
)

// readWindow is how much of the content one store read fetches for ReaderAt.
const readWindow = 1 << 20

// ReaderAt returns random access to the content of a, which Get or Usable
// returned, for readers that need it (zip archives). Reads are served from a
// window of the content fetched 1 MiB at a time, so the small sequential reads
// of an archive reader cost one store request per window, not one each. Not
// safe for concurrent use.
func (s *Service) ReaderAt(ctx context.Context, a Asset) io.ReaderAt {
	return &windowReader{ctx: ctx, s: s, a: a, start: -1}
}

type windowReader struct {
	ctx   context.Context
	s     *Service
	a     Asset
	start int64 // offset of buf in the content; -1 before the first fetch
	buf   []byte
}

// ReadAt implements io.ReaderAt.
func (w *windowReader) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		pos := off + int64(n)
		if pos >= w.a.Size {
			return n, io.EOF
		}
		if w.start < 0 || pos < w.start || pos >= w.start+int64(len(w.buf)) {
			if err := w.fetch(pos); err != nil {
				return n, err
			}
		}
		n += copy(p[n:], w.buf[pos-w.start:])
	}
	return n, nil
}

// fetch loads the window starting at pos.
func (w *windowReader) fetch(pos int64) error {
	length := min(int64(readWindow), w.a.Size-pos)
	r, err := w.s.Open(w.ctx, w.a, pos, length)
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }()
	buf := make([]byte, length)
	if _, err := io.ReadFull(r, buf); err != nil {
		return err
	}
	w.start, w.buf = pos, buf
	return nil
}
