package sandbox

import "bytes"

// CappedWriter keeps the first limit bytes written to it and discards the
// rest, remembering that it did: a command's output is read to its end (so
// the command never blocks on a full pipe) while at most Command.OutputLimit
// bytes of each stream are held. Write never fails.
type CappedWriter struct {
	limit     int
	buf       bytes.Buffer
	truncated bool
}

// NewCappedWriter returns a writer that keeps at most limit bytes.
func NewCappedWriter(limit int) *CappedWriter { return &CappedWriter{limit: limit} }

// Write keeps what still fits under the limit and reports all of p written.
func (w *CappedWriter) Write(p []byte) (int, error) {
	if room := w.limit - w.buf.Len(); room > 0 {
		w.buf.Write(p[:min(room, len(p))])
		if len(p) > room {
			w.truncated = true
		}
	} else if len(p) > 0 {
		w.truncated = true
	}
	return len(p), nil
}

// Bytes returns the bytes kept; they alias the writer's buffer.
func (w *CappedWriter) Bytes() []byte { return w.buf.Bytes() }

// String returns the bytes kept as a string.
func (w *CappedWriter) String() string { return w.buf.String() }

// Truncated reports whether anything written was discarded.
func (w *CappedWriter) Truncated() bool { return w.truncated }
