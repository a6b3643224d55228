package llm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// esMessage is one message of the AWS event stream encoding
// (application/vnd.amazon.eventstream): its string headers and payload.
type esMessage struct {
	headers map[string]string
	payload []byte
}

// maxEventMessage bounds one message (the format allows 16 MiB).
const maxEventMessage = 16 << 20

// readEventMessage reads one message: a prelude (total length, headers
// length, CRC32 of the two), the headers, the payload and a CRC32 of
// everything before it. io.EOF only when the input ends between messages.
// A message longer than maxEvent is an *OutputLimitError (BoundEvent),
// refused before it is read.
func readEventMessage(r io.Reader, maxEvent int) (esMessage, error) {
	var prelude [12]byte
	if _, err := io.ReadFull(r, prelude[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return esMessage{}, io.EOF
		}
		return esMessage{}, fmt.Errorf("reading an event stream prelude: %w", err)
	}
	total := binary.BigEndian.Uint32(prelude[0:4])
	hlen := binary.BigEndian.Uint32(prelude[4:8])
	if crc32.ChecksumIEEE(prelude[:8]) != binary.BigEndian.Uint32(prelude[8:12]) {
		return esMessage{}, errors.New("event stream prelude checksum mismatch")
	}
	if total <= maxEventMessage && int64(total) > int64(maxEvent) {
		return esMessage{}, &OutputLimitError{Bound: BoundEvent, Limit: int64(maxEvent)}
	}
	if total < 16 || total > maxEventMessage || hlen > total-16 {
		return esMessage{}, fmt.Errorf("event stream message of %d bytes with %d bytes of headers", total, hlen)
	}
	rest := make([]byte, total-12)
	if _, err := io.ReadFull(r, rest); err != nil {
		return esMessage{}, fmt.Errorf("reading an event stream message: %w", io.ErrUnexpectedEOF)
	}
	body, crc := rest[:len(rest)-4], binary.BigEndian.Uint32(rest[len(rest)-4:])
	h := crc32.NewIEEE()
	h.Write(prelude[:])
	h.Write(body)
	if h.Sum32() != crc {
		return esMessage{}, errors.New("event stream message checksum mismatch")
	}
	headers, err := parseEventHeaders(body[:hlen])
	if err != nil {
		return esMessage{}, err
	}
	return esMessage{headers: headers, payload: body[hlen:]}, nil
}

// parseEventHeaders reads the headers; string values are kept, the others
// (which Bedrock does not send) are skipped by their size.
func parseEventHeaders(b []byte) (map[string]string, error) {
	out := map[string]string{}
	bad := errors.New("malformed event stream headers")
	for len(b) > 0 {
		n := int(b[0])
		if len(b) < 1+n+1 {
			return nil, bad
		}
		name, typ := string(b[1:1+n]), b[1+n]
		b = b[2+n:]
		var size int
		switch typ {
		case 0, 1: // true, false
			size = 0
		case 2:
			size = 1
		case 3:
			size = 2
		case 4:
			size = 4
		case 5, 8: // long, timestamp
			size = 8
		case 9: // uuid
			size = 16
		case 6, 7: // bytes, string: a 2-byte length first
			if len(b) < 2 {
				return nil, bad
			}
			l := int(binary.BigEndian.Uint16(b))
			if len(b) < 2+l {
				return nil, bad
			}
			if typ == 7 {
				out[name] = string(b[2 : 2+l])
			}
			b = b[2+l:]
			continue
		default:
			return nil, bad
		}
		if len(b) < size {
			return nil, bad
		}
		b = b[size:]
	}
	return out, nil
}
