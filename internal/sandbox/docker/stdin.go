package docker

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"

	"github.com/svcdev/svc/internal/sandbox"
)

// A command with standard input is started on a hijacked connection: the
// start request asks for `Connection: Upgrade`, `Upgrade: tcp`, the engine
// answers 101 (engines before the upgrade handshake answer 200 and hijack
// the connection all the same), and from then on the connection carries the
// input one way and the multiplexed output the other. The input ends when the
// write side is half-closed (shutdown of a socket, close_notify over TLS):
// the engine then closes the process's standard input.
//
// The request goes through the engine's own client, so the connection is
// dialled exactly as every other call's, through the endpoint policy's guard
// (the allowed socket, or the guarded tcp dialer). The connection itself is
// taken from the client trace, because neither a 101 body nor a 200 body
// offers a half-close of its own.

// closeWriter is a connection whose write side can be closed alone:
// *net.UnixConn, *net.TCPConn and *tls.Conn.
type closeWriter interface {
	CloseWrite() error
}

// streamInput starts the exec on a hijacked connection, writes input and
// half-closes, while it demultiplexes the output into stdout and stderr until
// the command ends. The input is written from a goroutine of its own, so a
// command that writes much before it reads, or never reads at all, does not
// block the output; whatever the command leaves unread is dropped when the
// output ends.
func (in *Instance) streamInput(ctx context.Context, execID string, input []byte, stdout, stderr io.Writer) error {
	const op = "start exec"
	var (
		connMu sync.Mutex
		conn   net.Conn
	)
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		connMu.Lock()
		conn = info.Conn
		connMu.Unlock()
	}}
	req, err := in.e.request(httptrace.WithClientTrace(ctx, trace), op, http.MethodPost, "/exec/"+execID+"/start", nil,
		strings.NewReader(execStartBody), "application/json")
	if err != nil {
		return err
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "tcp")
	resp, err := in.e.do(op, req)
	connMu.Lock()
	c := conn
	connMu.Unlock()
	if err != nil {
		if tc, ok := c.(*tls.Conn); ok && tc.ConnectionState().NegotiatedProtocol == "h2" {
			// The HTTP/2 client refuses the upgrade headers outright.
			return errNoHTTP1(op, 0)
		}
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	switch resp.StatusCode {
	case http.StatusSwitchingProtocols, http.StatusOK:
	case http.StatusNotFound:
		return engineError(op, resp).withCause(sandbox.ErrGone)
	default:
		return engineError(op, resp)
	}
	half, ok := c.(closeWriter)
	if resp.ProtoMajor != 1 || !ok {
		return errNoHTTP1(op, resp.StatusCode)
	}
	// After the switch the transport no longer watches ctx; closing the
	// connection ends both the output read and a blocked input write.
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()

	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		// A write error means the engine stopped reading: the command ended
		// or never reads its input, which is its business, not a failure.
		if _, err := c.Write(input); err == nil {
			_ = half.CloseWrite()
		}
	}()
	err = demux(resp.Body, stdout, stderr)
	_ = c.Close() // unblocks a write the command will never read
	<-wrote
	return outputError(ctx, err)
}

// errNoHTTP1 is a connection that cannot be hijacked: standard input needs an
// HTTP/1.1 connection (a socket, or TLS without HTTP/2) that can be half-closed.
func errNoHTTP1(op string, status int) *Error {
	return &Error{Op: op, Status: status, Message: "the engine's connection cannot carry standard input (it needs HTTP/1.1, not HTTP/2)"}
}
