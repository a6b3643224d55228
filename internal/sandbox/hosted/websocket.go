package hosted

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha1" //nolint:gosec // RFC 6455 fixes SHA-1 for the handshake's accept key.
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// A minimal RFC 6455 WebSocket client, enough for Kubernetes' exec channel
// protocol: the handshake goes through the caller's *http.Client (so the
// endpoint policy dials it; Go's transport keeps upgrade requests on
// HTTP/1.1 and returns the connection as the 101 answer's body), messages are
// binary, and pings are answered.

const (
	wsGUID        = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
	wsOpCont      = 0x0
	wsOpText      = 0x1
	wsOpBinary    = 0x2
	wsOpClose     = 0x8
	wsOpPing      = 0x9
	wsOpPong      = 0xA
	wsMaxMessage  = 16 << 20
	wsMaxFrameLen = 16 << 20
)

// errWSClosed is a connection the server closed.
var errWSClosed = errors.New("websocket: closed by the server")

// wsConn is an open WebSocket client connection.
type wsConn struct {
	rwc io.ReadWriteCloser
	r   *bufio.Reader
	wmu sync.Mutex
}

// wsDial upgrades req (a GET) to a WebSocket speaking protocol. It returns
// the *http.Response when the server answers anything but 101, with its
// body drained and closed.
func wsDial(ctx context.Context, client *http.Client, req *http.Request, protocol string) (*wsConn, *http.Response, error) {
	var k [16]byte
	_, _ = rand.Read(k[:])
	key := base64.StdEncoding.EncodeToString(k[:])
	req = req.WithContext(ctx)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", key)
	req.Header.Set("Sec-WebSocket-Protocol", protocol)
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		return nil, resp, nil
	}
	rwc, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		_ = resp.Body.Close()
		return nil, nil, errors.New("websocket: the HTTP client cannot hand over the connection")
	}
	sum := sha1.Sum([]byte(key + wsGUID)) //nolint:gosec // see import
	if resp.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]) {
		_ = rwc.Close()
		return nil, nil, errors.New("websocket: bad accept key")
	}
	if resp.Header.Get("Sec-WebSocket-Protocol") != protocol {
		_ = rwc.Close()
		return nil, nil, fmt.Errorf("websocket: the server does not speak %s", protocol)
	}
	return &wsConn{rwc: rwc, r: bufio.NewReader(rwc)}, nil, nil
}

// writeFrame writes one masked frame.
func (c *wsConn) writeFrame(op byte, payload []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	hdr := make([]byte, 0, 14)
	hdr = append(hdr, 0x80|op)
	switch n := len(payload); {
	case n < 126:
		hdr = append(hdr, 0x80|byte(n))
	case n <= 0xFFFF:
		hdr = append(hdr, 0x80|126)
		hdr = binary.BigEndian.AppendUint16(hdr, uint16(n))
	default:
		hdr = append(hdr, 0x80|127)
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	var mask [4]byte
	_, _ = rand.Read(mask[:])
	hdr = append(hdr, mask[:]...)
	buf := make([]byte, len(hdr)+len(payload))
	copy(buf, hdr)
	for i, b := range payload {
		buf[len(hdr)+i] = b ^ mask[i%4]
	}
	_, err := c.rwc.Write(buf)
	return err
}

// WriteMessage sends one binary message.
func (c *wsConn) WriteMessage(p []byte) error { return c.writeFrame(wsOpBinary, p) }

// ReadMessage returns the next data message, answering pings on the way.
// A close frame from the server is errWSClosed.
func (c *wsConn) ReadMessage() ([]byte, error) {
	var msg []byte
	for {
		fin, op, payload, err := c.readFrame()
		if err != nil {
			return nil, err
		}
		switch op {
		case wsOpPing:
			if err := c.writeFrame(wsOpPong, payload); err != nil {
				return nil, err
			}
			continue
		case wsOpPong:
			continue
		case wsOpClose:
			_ = c.writeFrame(wsOpClose, nil)
			return nil, errWSClosed
		case wsOpText, wsOpBinary, wsOpCont:
			if len(msg)+len(payload) > wsMaxMessage {
				return nil, errors.New("websocket: message too large")
			}
			msg = append(msg, payload...)
			if fin {
				return msg, nil
			}
		default:
			return nil, fmt.Errorf("websocket: unknown opcode %d", op)
		}
	}
}

func (c *wsConn) readFrame() (fin bool, op byte, payload []byte, err error) {
	var h [2]byte
	if _, err := io.ReadFull(c.r, h[:]); err != nil {
		return false, 0, nil, err
	}
	fin, op = h[0]&0x80 != 0, h[0]&0x0F
	n := uint64(h[1] & 0x7F)
	switch n {
	case 126:
		var b [2]byte
		if _, err := io.ReadFull(c.r, b[:]); err != nil {
			return false, 0, nil, err
		}
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err := io.ReadFull(c.r, b[:]); err != nil {
			return false, 0, nil, err
		}
		n = binary.BigEndian.Uint64(b[:])
	}
	if n > wsMaxFrameLen {
		return false, 0, nil, errors.New("websocket: frame too large")
	}
	var mask [4]byte
	masked := h[1]&0x80 != 0
	if masked {
		if _, err := io.ReadFull(c.r, mask[:]); err != nil {
			return false, 0, nil, err
		}
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(c.r, payload); err != nil {
		return false, 0, nil, err
	}
	if masked {
		for i := range payload {
			payload[i] ^= mask[i%4]
		}
	}
	return fin, op, payload, nil
}

// Close closes the connection without the closing handshake.
func (c *wsConn) Close() error { return c.rwc.Close() }
