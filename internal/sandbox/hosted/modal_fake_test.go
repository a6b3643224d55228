package hosted

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
)

// fakeModal speaks Modal's gRPC API (service modal.client.ModalClient, the
// real method names, field numbers and headers) over cleartext HTTP/2.
// Sandboxes are temporary directories standing for the sandbox user's HOME;
// ContainerExec runs the command it is given on the host, with its stdin,
// stdout and stderr streamed through the exec calls.
type fakeModal struct {
	t            *testing.T
	addr         string
	tokenID      string
	tokenSecret  string
	maxPoll      time.Duration // cap on the long polls the client asks for
	chunk        int           // output bytes per RuntimeOutputMessage
	mu           sync.Mutex
	calls        []modalCall
	next         int
	apps         map[string]string
	boxes        map[string]*modalBox
	execs        map[string]*modalProc
	imageBuilt   bool
	imageRefused bool
}

// modalCall is one call received, decoded.
type modalCall struct {
	Method string
	Req    pbFields
	MD     metadata.MD
}

type modalBox struct {
	id, task, home string
	env            string
	polls          int
	terminated     bool
}

type modalProc struct {
	cmd       *exec.Cmd
	stdin     io.WriteCloser
	nextIndex uint64
	out       [3]bytes.Buffer // by file descriptor; guarded by fakeModal.mu
	done      chan struct{}
	code      int
	signaled  bool
}

// lockedWriter appends to a buffer under the fake's lock.
type lockedWriter struct {
	mu  *sync.Mutex
	buf *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func newFakeModal(t *testing.T) *fakeModal {
	t.Helper()
	f := &fakeModal{
		t: t, tokenID: "ak-test123", tokenSecret: "as-secret456",
		maxPoll: 200 * time.Millisecond, chunk: 1000,
		apps: map[string]string{}, boxes: map[string]*modalBox{}, execs: map[string]*modalProc{},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer(grpc.ForceServerCodec(pbCodec{}), grpc.UnknownServiceHandler(f.handle))
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Stop()
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, p := range f.execs {
			if p.cmd.Process != nil {
				_ = p.cmd.Process.Kill()
			}
		}
	})
	f.addr = ln.Addr().String()
	return f
}

// find returns the calls of one method.
func (f *fakeModal) find(method string) []modalCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []modalCall
	for _, c := range f.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeModal) box(id string) *modalBox {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.boxes[id]
}

func (f *fakeModal) handle(_ any, stream grpc.ServerStream) error {
	full, _ := grpc.MethodFromServerStream(stream)
	method, ok := strings.CutPrefix(full, "/modal.client.ModalClient/")
	if !ok {
		return status.Error(codes.Unimplemented, "unknown service")
	}
	md, _ := metadata.FromIncomingContext(stream.Context())
	var in pbFrame
	if err := stream.RecvMsg(&in); err != nil {
		return err
	}
	req, err := parsePB(in.b)
	if err != nil {
		return status.Error(codes.InvalidArgument, "bad message")
	}
	f.mu.Lock()
	f.calls = append(f.calls, modalCall{Method: method, Req: req, MD: md})
	f.mu.Unlock()
	if first(md, "x-modal-client-type") == "" || first(md, "x-modal-client-version") == "" {
		return status.Error(codes.FailedPrecondition, "client type and version are required")
	}
	if id, secret := first(md, "x-modal-token-id"), first(md, "x-modal-token-secret"); id != f.tokenID || secret != f.tokenSecret {
		// Echo the credential as a careless server might: the driver must not repeat it.
		return status.Errorf(codes.Unauthenticated, "token %s/%s is not valid", id, secret)
	}
	send := func(m pbMsg) error { return stream.SendMsg(&pbFrame{b: m}) }
	ctx := stream.Context()
	switch method {
	case "AppGetOrCreate":
		if req.uint(3) != modalCreateIfMissing || req.str(1) == "" {
			return status.Error(codes.InvalidArgument, "bad app request")
		}
		f.mu.Lock()
		id, ok := f.apps[req.str(1)+"/"+req.str(2)]
		if !ok {
			f.next++
			id = fmt.Sprintf("ap-%d", f.next)
			f.apps[req.str(1)+"/"+req.str(2)] = id
		}
		f.mu.Unlock()
		return send(pbMsg{}.str(1, id))
	case "ImageGetOrCreate":
		img, _ := req.sub(2)
		cmds := img.strs(6)
		if len(cmds) != 1 || !strings.HasPrefix(cmds[0], "FROM ") || !strings.HasPrefix(req.str(4), "ap-") {
			return status.Error(codes.InvalidArgument, "bad image request")
		}
		f.mu.Lock()
		built := f.imageBuilt
		f.mu.Unlock()
		resp := pbMsg{}.str(1, "im-1")
		if built { // a cached image comes back with its result
			resp = resp.msg(2, pbMsg{}.uint(1, modalStatusSuccess))
		}
		return send(resp)
	case "ImageJoinStreaming":
		if req.str(1) != "im-1" {
			return status.Error(codes.NotFound, "no such image")
		}
		if err := send(pbMsg{}.str(3, "1-0")); err != nil { // logs only
			return err
		}
		result := pbMsg{}.uint(1, modalStatusSuccess)
		if f.imageRefused {
			result = pbMsg{}.uint(1, 2).str(2, "pull failed") // GENERIC_STATUS_FAILURE
		}
		f.mu.Lock()
		f.imageBuilt = !f.imageRefused
		f.mu.Unlock()
		return send(pbMsg{}.msg(1, result).str(3, "2-0").boolean(4, true))
	case "SandboxCreate":
		def, _ := req.sub(2)
		if def.str(3) != "im-1" || len(def.strs(1)) == 0 {
			return status.Error(codes.InvalidArgument, "bad sandbox definition")
		}
		f.mu.Lock()
		f.next++
		b := &modalBox{id: fmt.Sprintf("sb-%d", f.next), task: fmt.Sprintf("ta-%d", f.next), home: f.t.TempDir(), env: req.str(3)}
		f.boxes[b.id] = b
		f.mu.Unlock()
		return send(pbMsg{}.str(1, b.id))
	case "SandboxGetTaskId":
		f.mu.Lock()
		b := f.boxes[req.str(1)]
		var resp pbMsg
		switch {
		case b == nil:
			f.mu.Unlock()
			return status.Error(codes.NotFound, "no such sandbox")
		case b.terminated:
			resp = pbMsg{}.msg(2, pbMsg{}.uint(1, 3)) // task_result: GENERIC_STATUS_TERMINATED
		case b.polls == 0: // not scheduled yet on the first ask
			b.polls++
		default:
			resp = pbMsg{}.str(1, b.task)
		}
		f.mu.Unlock()
		return send(resp)
	case "SandboxWait":
		f.mu.Lock()
		b := f.boxes[req.str(1)]
		f.mu.Unlock()
		if b == nil {
			return status.Error(codes.NotFound, "no such sandbox")
		}
		if b.terminated {
			return send(pbMsg{}.msg(1, pbMsg{}.uint(1, 3)))
		}
		return send(pbMsg{})
	case "SandboxTerminate":
		f.mu.Lock()
		b := f.boxes[req.str(1)]
		if b != nil {
			b.terminated = true
		}
		f.mu.Unlock()
		if b == nil {
			return status.Error(codes.NotFound, "no such sandbox")
		}
		return send(pbMsg{})
	case "ContainerExec":
		return f.startExec(req, send)
	case "ContainerExecPutInput":
		p := f.proc(req.str(1))
		if p == nil {
			return status.Error(codes.NotFound, "no such exec")
		}
		msg, _ := req.sub(2)
		f.mu.Lock()
		if msg.uint(2) != p.nextIndex {
			f.mu.Unlock()
			return status.Errorf(codes.InvalidArgument, "input index %d, want %d", msg.uint(2), p.nextIndex)
		}
		p.nextIndex++
		f.mu.Unlock()
		// A process that exited or closed its stdin drops the input, as a pipe would.
		_, _ = p.stdin.Write(msg.raw(1))
		if msg.boolean(3) {
			_ = p.stdin.Close()
		}
		return send(pbMsg{})
	case "ContainerExecGetOutput":
		p := f.proc(req.str(1))
		fd := req.uint(4)
		if p == nil || (fd != modalStdout && fd != modalStderr) || !req.boolean(5) {
			return status.Error(codes.InvalidArgument, "bad output request")
		}
		if !f.waitDone(ctx, p, req.float(2)) {
			return nil // the long poll ran out; the client asks again
		}
		f.mu.Lock()
		data := bytes.Clone(p.out[fd].Bytes())
		f.mu.Unlock()
		var batches []pbMsg
		for i := 0; i < len(data) || i == 0; i += f.chunk {
			item := pbMsg{}.uint(1, fd).bytes(3, data[i:min(i+f.chunk, len(data))])
			batches = append(batches, pbMsg{}.msg(1, item).uint(2, uint64(len(batches)+1)))
		}
		for n, b := range batches {
			if uint64(n+1) <= req.uint(3) {
				continue // sent before the client's last batch index
			}
			if n == len(batches)-1 {
				b = b.optInt(3, int32(p.code))
			}
			if err := send(b); err != nil {
				return err
			}
		}
		return nil
	case "ContainerExecWait":
		p := f.proc(req.str(1))
		if p == nil {
			return status.Error(codes.NotFound, "no such exec")
		}
		if !f.waitDone(ctx, p, req.float(2)) {
			return send(pbMsg{})
		}
		resp := pbMsg{}.boolean(2, true)
		if !p.signaled {
			resp = pbMsg{}.optInt(1, int32(p.code)).boolean(2, true)
		}
		return send(resp)
	}
	return status.Error(codes.Unimplemented, method)
}

func first(md metadata.MD, k string) string {
	if v := md.Get(k); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (f *fakeModal) proc(id string) *modalProc {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.execs[id]
}

// waitDone waits for the process within the long poll asked for, capped.
func (f *fakeModal) waitDone(ctx context.Context, p *modalProc, secs float32) bool {
	poll := min(time.Duration(secs*float32(time.Second)), f.maxPoll)
	select {
	case <-p.done:
		return true
	case <-ctx.Done():
		return false
	case <-time.After(poll):
		return false
	}
}

func (f *fakeModal) startExec(req pbFields, send func(pbMsg) error) error {
	f.mu.Lock()
	var b *modalBox
	for _, x := range f.boxes {
		if x.task == req.str(1) {
			b = x
		}
	}
	f.mu.Unlock()
	argv := req.strs(2)
	switch {
	case b == nil || b.terminated:
		return status.Error(codes.NotFound, "no such task")
	case len(argv) == 0 || req.uint(6) != modalOutputPipe || req.uint(7) != modalOutputPipe:
		return status.Error(codes.InvalidArgument, "bad exec request")
	}
	dir := b.home
	if req.has(9) {
		dir = req.str(9)
	}
	p := &modalProc{nextIndex: 1, done: make(chan struct{})}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Dir = dir
	p.cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + b.home}
	p.cmd.Stdout = lockedWriter{&f.mu, &p.out[modalStdout]}
	p.cmd.Stderr = lockedWriter{&f.mu, &p.out[modalStderr]}
	stdin, err := p.cmd.StdinPipe()
	if err != nil {
		return status.Error(codes.Internal, "stdin")
	}
	p.stdin = stdin
	if err := p.cmd.Start(); err != nil {
		return status.Error(codes.Internal, "start failed")
	}
	f.mu.Lock()
	f.next++
	id := fmt.Sprintf("ex-%d", f.next)
	f.execs[id] = p
	f.mu.Unlock()
	go func() {
		_ = p.cmd.Wait()
		code, ok := exitCode(p.cmd)
		p.code, p.signaled = code, !ok
		close(p.done)
	}()
	return send(pbMsg{}.str(1, id))
}

// field is a test shorthand for one protowire field number.
func field(n int) protowire.Number { return protowire.Number(n) }
