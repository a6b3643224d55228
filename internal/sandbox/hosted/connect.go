package hosted

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// The Connect protocol (connectrpc.com/docs/protocol), JSON codec, as E2B's
// envd serves it: a unary call is a POST of the JSON message with
// Content-Type application/json and answers with the JSON message (or an
// error object and a non-200 status); a server-streaming call POSTs one
// enveloped message with Content-Type application/connect+json and answers
// with enveloped messages, the last flagged end-of-stream.

const (
	connectVersion = "1"
	// envelope flags
	flagCompressed = 0x01
	flagEndStream  = 0x02
	// maxEnvelope bounds one streamed message (envd sends output in small chunks).
	maxEnvelope = 8 << 20
)

// connectUnary calls procedure (e.g. "/filesystem.Filesystem/ListDir") with
// req and decodes the answer into out.
func connectUnary(ctx context.Context, a api, op, procedure string, req, out any) error {
	return a.do(ctx, call{
		op: op, method: http.MethodPost, path: procedure, json: req, out: out,
		headers: http.Header{"Connect-Protocol-Version": {connectVersion}},
	})
}

// envelope frames one streamed message.
func envelope(msg any) ([]byte, error) {
	b, err := json.Marshal(msg)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 5, 5+len(b))
	binary.BigEndian.PutUint32(out[1:], uint32(len(b)))
	return append(out, b...), nil
}

// endStream is the last message of a stream.
type endStream struct {
	Error *struct {
		Code string `json:"code"`
	} `json:"error"`
}

// streamReader reads a server stream's envelopes.
type streamReader struct {
	r io.Reader
}

// next returns the next message's bytes; end is set for the end-of-stream
// message, whose error code (if any) is returned as code.
func (s *streamReader) next() (msg []byte, end bool, code string, err error) {
	var hdr [5]byte
	if _, err := io.ReadFull(s.r, hdr[:]); err != nil {
		return nil, false, "", err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > maxEnvelope {
		return nil, false, "", fmt.Errorf("streamed message of %d bytes", n)
	}
	if hdr[0]&flagCompressed != 0 {
		return nil, false, "", fmt.Errorf("compressed message not asked for")
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(s.r, buf); err != nil {
		return nil, false, "", err
	}
	if hdr[0]&flagEndStream != 0 {
		var es endStream
		if len(bytes.TrimSpace(buf)) > 0 {
			if err := json.Unmarshal(buf, &es); err != nil {
				return nil, true, "unknown", nil
			}
		}
		if es.Error != nil {
			code = es.Error.Code
			if code == "" {
				code = "unknown"
			}
		}
		return nil, true, code, nil
	}
	return buf, false, "", nil
}

// flexInt decodes a protojson 64-bit integer, which arrives as a string.
type flexInt int64

func (f *flexInt) UnmarshalJSON(b []byte) error {
	b = bytes.Trim(b, `"`)
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	*f = flexInt(v)
	return err
}
