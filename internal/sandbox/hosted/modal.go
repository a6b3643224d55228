package hosted

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/sandbox"
)

// Modal serves the modal type: sandboxes made from a registry image in an
// app (got or created by name), commands run with ContainerExec and its
// output streams, files moved by commands in the sandbox, and terminated on
// Destroy. Modal speaks gRPC only; every connection goes through the
// endpoint policy's guarded dialer.
type Modal struct {
	policy    *endpoint.Policy
	addr      string
	plaintext bool
	poll      time.Duration

	mu      sync.Mutex
	conn    *grpc.ClientConn
	refused error // the policy's refusal of the last dial, if it refused
}

// ModalOptions configures NewModal.
type ModalOptions struct {
	// Address is the API server's host:port; "" is api.modal.com:443.
	Address string
	// Plaintext speaks gRPC over cleartext HTTP/2 instead of TLS: for tests
	// against a local server only.
	Plaintext bool
}

// modalDefaultAddress is Modal's public API server.
const modalDefaultAddress = "api.modal.com:443"

// NewModal returns the modal driver. Its one gRPC connection is opened on
// first use, through policy's dialer, and shared by every provider: the
// credential travels with each call, never with the connection.
func NewModal(policy *endpoint.Policy, o ModalOptions) *Modal {
	addr := o.Address
	if addr == "" {
		addr = modalDefaultAddress
	}
	return &Modal{policy: policy, addr: addr, plaintext: o.Plaintext, poll: pollInterval}
}

const (
	modalService = "/modal.client.ModalClient/"
	// Headers Modal's Go SDK sends: client type 9 is CLIENT_TYPE_LIBMODAL_GO,
	// and the server gates features on the Python client version it claims.
	modalClientType    = "9"
	modalClientVersion = "1.0.0"
	// modalBuilderVersion is the image builder version asked for.
	modalBuilderVersion = "2024.10"
	// modalDefaultTimeout is the sandbox lifetime when the template sets
	// none, Modal's own default.
	modalDefaultTimeout = 300
	// modalMaxMessage bounds one gRPC message either way.
	modalMaxMessage = 64 << 20
	// modalStdinChunk is the stdin sent in one ContainerExecPutInput.
	modalStdinChunk = 1 << 20
	// modalLongPoll is the server-side wait asked of long-polling calls.
	modalLongPoll = 50
)

// Enum values of modal_proto/api.proto.
const (
	modalCreateIfMissing   = 1 // ObjectCreationType OBJECT_CREATION_TYPE_CREATE_IF_MISSING
	modalNamespaceWS       = 1 // DeploymentNamespace DEPLOYMENT_NAMESPACE_WORKSPACE
	modalNetworkOpen       = 1 // NetworkAccess.NetworkAccessType OPEN
	modalOutputPipe        = 2 // ExecOutputOption EXEC_OUTPUT_OPTION_PIPE
	modalStdout            = 1 // FileDescriptor FILE_DESCRIPTOR_STDOUT
	modalStderr            = 2 // FileDescriptor FILE_DESCRIPTOR_STDERR
	modalStatusUnspecified = 0 // GenericResult GENERIC_STATUS_UNSPECIFIED
	modalStatusSuccess     = 1 // GenericResult GENERIC_STATUS_SUCCESS
)

type modalTemplate struct {
	Image          string  `json:"image"`
	CPU            float64 `json:"cpu"`
	MemoryMB       int     `json:"memory_mb"`
	GPU            string  `json:"gpu"`
	Region         string  `json:"region"`
	TimeoutSeconds int     `json:"timeout_seconds"`
}

type modalProvider struct {
	Environment string `json:"environment"`
	AppName     string `json:"app_name"`
}

// modalHandle is what reattaching needs: the sandbox, the task running it
// (commands name the task) and the working directory. No credential.
type modalHandle struct {
	SandboxID string `json:"sandbox_id"`
	TaskID    string `json:"task_id"`
	Workdir   string `json:"workdir"`
}

// modalAPI is one provider's view of the API: the connection and the
// headers that authenticate its calls.
type modalAPI struct {
	d  *Modal
	md metadata.MD
}

func (d *Modal) setup(spec sandbox.Spec) (modalAPI, modalProvider, modalTemplate, error) {
	var p modalProvider
	var c struct {
		TokenID     string `json:"token_id"`
		TokenSecret string `json:"token_secret"`
	}
	var t modalTemplate
	for _, x := range []struct {
		what string
		raw  []byte
		v    any
	}{{"provider configuration", spec.Provider, &p}, {"credential", spec.Credential, &c}, {"template configuration", spec.Template, &t}} {
		if err := decodeJSON(TypeModal, x.what, x.raw, x.v); err != nil {
			return modalAPI{}, p, t, err
		}
	}
	if c.TokenID == "" || c.TokenSecret == "" {
		return modalAPI{}, p, t, configError(TypeModal, "the provider has no token id and secret")
	}
	if !headerSafe(c.TokenID) || !headerSafe(c.TokenSecret) {
		return modalAPI{}, p, t, configError(TypeModal, "the token id or secret has characters a header cannot carry")
	}
	if p.AppName == "" {
		p.AppName = "svc"
	}
	md := metadata.Pairs(
		"x-modal-client-type", modalClientType,
		"x-modal-client-version", modalClientVersion,
		"x-modal-token-id", c.TokenID,
		"x-modal-token-secret", c.TokenSecret,
	)
	return modalAPI{d: d, md: md}, p, t, nil
}

// headerSafe reports whether s is printable ASCII without spaces, as a
// token is; anything else would be refused by the transport with an error
// that might quote it.
func headerSafe(s string) bool {
	for _, c := range s {
		if c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}

// connection returns the shared connection, making it on first use.
func (d *Modal) connection() (*grpc.ClientConn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.conn != nil {
		return d.conn, nil
	}
	creds := credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})
	if d.plaintext {
		creds = insecure.NewCredentials()
	}
	// passthrough: the address goes to the dialer as it is, which resolves
	// it with the policy's resolver and checks every address it connects to.
	conn, err := grpc.NewClient("passthrough:///"+d.addr,
		grpc.WithTransportCredentials(creds),
		grpc.WithContextDialer(d.dial),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(pbCodec{}),
			grpc.MaxCallRecvMsgSize(modalMaxMessage), grpc.MaxCallSendMsgSize(modalMaxMessage)),
		grpc.WithUserAgent("svc-envhosted"),
		// The connection is shared by every provider: after a network blip,
		// reconnect within seconds rather than gRPC's default of up to two
		// minutes, during which every call would fail as unreachable.
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{
			BaseDelay: 500 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 5 * time.Second,
		}, MinConnectTimeout: 10 * time.Second}),
	)
	if err != nil {
		return nil, &Error{Vendor: TypeModal, Op: "connect", Msg: "invalid API server address"}
	}
	d.conn = conn
	return conn, nil
}

// dial connects through the endpoint policy and remembers a refusal, which
// gRPC would otherwise fold into a plain "unavailable".
func (d *Modal) dial(ctx context.Context, addr string) (net.Conn, error) {
	conn, err := d.policy.DialContext(ctx, "tcp", addr)
	d.mu.Lock()
	d.refused = nil
	if errors.Is(err, endpoint.ErrRefused) {
		d.refused = err
	}
	d.mu.Unlock()
	return conn, err
}

// Close closes the driver's connection.
func (d *Modal) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.conn == nil {
		return nil
	}
	err := d.conn.Close()
	d.conn = nil
	return err
}

// call makes one unary call and decodes the answer.
func (a modalAPI) call(ctx context.Context, op, method string, req pbMsg) (pbFields, error) {
	conn, err := a.d.connection()
	if err != nil {
		return nil, err
	}
	var out pbFrame
	if err := conn.Invoke(metadata.NewOutgoingContext(ctx, a.md), modalService+method, &pbFrame{b: req}, &out); err != nil {
		return nil, a.rpcError(ctx, op, err)
	}
	f, err := parsePB(out.b)
	if err != nil {
		return nil, &Error{Vendor: TypeModal, Op: op, Msg: "the answer is not the expected message"}
	}
	return f, nil
}

// stream makes one server-streaming call and hands each message to each
// until the stream ends or each reports it has seen enough.
func (a modalAPI) stream(ctx context.Context, op, method string, req pbMsg, each func(pbFields) (bool, error)) error {
	conn, err := a.d.connection()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the call when each stops early
	s, err := conn.NewStream(metadata.NewOutgoingContext(ctx, a.md), &grpc.StreamDesc{ServerStreams: true}, modalService+method)
	if err != nil {
		return a.rpcError(ctx, op, err)
	}
	if err := s.SendMsg(&pbFrame{b: req}); err != nil {
		if err == io.EOF {
			err = s.RecvMsg(&pbFrame{}) // the status is read from the receive side
		}
		return a.rpcError(ctx, op, err)
	}
	if err := s.CloseSend(); err != nil {
		return a.rpcError(ctx, op, err)
	}
	for {
		var out pbFrame
		if err := s.RecvMsg(&out); err == io.EOF {
			return nil
		} else if err != nil {
			return a.rpcError(ctx, op, err)
		}
		f, err := parsePB(out.b)
		if err != nil {
			return &Error{Vendor: TypeModal, Op: op, Msg: "the answer is not the expected message"}
		}
		done, err := each(f)
		if err != nil || done {
			return err
		}
	}
}

// rpcError describes a failed call by its gRPC code alone: the server's
// message may quote the request, and the transport's the address.
func (a modalAPI) rpcError(ctx context.Context, op string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("envhosted: modal: %s: %w", op, ctxErr)
	}
	e := &Error{Vendor: TypeModal, Op: op}
	code := status.Code(err)
	switch code {
	case codes.Unauthenticated, codes.PermissionDenied:
		e.Msg = "the vendor refused the credential"
	case codes.NotFound:
		e.Msg, e.kind = "not found", sandbox.ErrNotFound
	case codes.ResourceExhausted:
		e.Msg = "rate limited or over quota"
	case codes.InvalidArgument, codes.FailedPrecondition, codes.OutOfRange, codes.AlreadyExists:
		e.Msg = "the vendor refused the request"
	case codes.DeadlineExceeded:
		e.Msg = "no answer in time"
	case codes.Unavailable:
		a.d.mu.Lock()
		refused := a.d.refused
		a.d.mu.Unlock()
		if refused != nil {
			e.Msg, _ = endpoint.Refusal(refused)
			e.kind = endpoint.ErrRefused
		} else {
			e.Msg = "the vendor is unreachable"
		}
	default:
		e.Msg = "the vendor failed"
	}
	e.Msg += " (gRPC " + code.String() + ")"
	return e
}

// modalGone turns a NotFound of the sandbox into sandbox.ErrGone.
func modalGone(err error) error {
	var e *Error
	if errors.As(err, &e) && errors.Is(e.kind, sandbox.ErrNotFound) {
		return &Error{Vendor: TypeModal, Op: e.Op, Msg: "the sandbox no longer exists", kind: sandbox.ErrGone}
	}
	return err
}

// Create gets or creates the app and the image, makes a sandbox whose
// entrypoint only waits, waits for its task and records its HOME as the
// working directory. A sandbox that fails to come up is terminated.
func (d *Modal) Create(ctx context.Context, spec sandbox.Spec) (sandbox.Handle, error) {
	a, p, t, err := d.setup(spec)
	if err != nil {
		return nil, err
	}
	if t.Image == "" {
		return nil, configError(TypeModal, "the template has no image")
	}
	resources, err := modalResources(t)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	app, err := a.call(cctx, "get or create app", "AppGetOrCreate",
		pbMsg{}.str(1, p.AppName).str(2, p.Environment).uint(3, modalCreateIfMissing))
	if err != nil {
		return nil, err
	}
	appID := app.str(1)
	if appID == "" {
		return nil, &Error{Vendor: TypeModal, Op: "get or create app", Msg: "the answer has no app id"}
	}
	imageID, err := d.image(ctx, a, appID, t.Image)
	if err != nil {
		return nil, err
	}
	timeout := t.TimeoutSeconds
	if timeout <= 0 {
		timeout = modalDefaultTimeout
	}
	def := pbMsg{}.
		strs(1, []string{"sh", "-c", "while :; do sleep 3600; done"}). // entrypoint_args: keep the sandbox alive
		str(3, imageID).                                               // image_id
		msg(5, resources).                                             // resources
		uint(7, uint64(timeout)).                                      // timeout_secs
		msg(22, pbMsg{}.uint(1, modalNetworkOpen))                     // network_access
	if t.Region != "" {
		def = def.msg(17, pbMsg{}.strs(4, []string{t.Region})) // scheduler_placement.regions
	}
	cctx, cancel = context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	sb, err := a.call(cctx, "create sandbox", "SandboxCreate", pbMsg{}.str(1, appID).msg(2, def).str(3, p.Environment))
	if err != nil {
		return nil, err
	}
	h := modalHandle{SandboxID: sb.str(1)}
	if h.SandboxID == "" {
		return nil, &Error{Vendor: TypeModal, Op: "create sandbox", Msg: "the answer has no sandbox id"}
	}
	handle, err := d.start(ctx, a, h)
	if err != nil {
		// Do not leave a sandbox running until its time-out for nothing.
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killTimeout)
		defer cancel()
		_, _ = a.call(tctx, "terminate sandbox", "SandboxTerminate", pbMsg{}.str(1, h.SandboxID))
		return nil, err
	}
	return handle, nil
}

// start waits for the sandbox's task and reads its working directory.
func (d *Modal) start(ctx context.Context, a modalAPI, h modalHandle) (sandbox.Handle, error) {
	task, err := d.waitTask(ctx, a, h.SandboxID)
	if err != nil {
		return nil, err
	}
	h.TaskID = task
	inst := &modalInstance{a: a, h: h}
	res, err := inst.exec(ctx, `printf %s "$HOME"`, nil, false, 4096, controlTimeout)
	if err != nil {
		return nil, err
	}
	home := strings.TrimRight(string(res.stdout), "/")
	if res.code != 0 || !strings.HasPrefix(string(res.stdout), "/") {
		return nil, &Error{Vendor: TypeModal, Op: "read home directory", Msg: "the sandbox has no absolute HOME"}
	}
	if home == "" {
		home = "/"
	}
	h.Workdir = home
	b, err := json.Marshal(h)
	return sandbox.Handle(b), err
}

// modalResources encodes the template's CPU, memory and GPU as a Resources
// message.
func modalResources(t modalTemplate) (pbMsg, error) {
	r := pbMsg{}.uint(2, uint64(max(t.MemoryMB, 0))).uint(3, uint64(max(t.CPU, 0)*1000))
	if t.GPU != "" {
		kind, count, found := strings.Cut(t.GPU, ":")
		n := uint64(1)
		if found {
			v, err := strconv.ParseUint(count, 10, 32)
			if err != nil || v == 0 {
				return nil, configError(TypeModal, "the template's gpu count is not a positive number")
			}
			n = v
		}
		if kind == "" {
			return nil, configError(TypeModal, "the template's gpu names no type")
		}
		r = r.msg(4, pbMsg{}.uint(2, n).str(4, strings.ToUpper(kind))) // gpu_config: count, gpu_type
	}
	return r, nil
}

// image gets or creates the image FROM the registry image and waits for its
// build when it is not built yet.
func (d *Modal) image(ctx context.Context, a modalAPI, appID, ref string) (string, error) {
	const op = "build image"
	cctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	img := pbMsg{}.strs(6, []string{"FROM " + ref}) // Image.dockerfile_commands
	resp, err := a.call(cctx, op, "ImageGetOrCreate",
		pbMsg{}.msg(2, img).str(4, appID).uint(8, modalNamespaceWS).str(9, modalBuilderVersion))
	if err != nil {
		return "", err
	}
	id := resp.str(1)
	if id == "" {
		return "", &Error{Vendor: TypeModal, Op: op, Msg: "the answer has no image id"}
	}
	result, err := resp.sub(2)
	if err != nil {
		return "", &Error{Vendor: TypeModal, Op: op, Msg: "the answer is not the expected message"}
	}
	wctx, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	last := ""
	for result.uint(1) == modalStatusUnspecified {
		err := a.stream(wctx, op, "ImageJoinStreaming", pbMsg{}.str(1, id).float(2, modalLongPoll).str(3, last),
			func(m pbFields) (bool, error) {
				if e := m.str(3); e != "" {
					last = e
				}
				r, err := m.sub(1)
				if err != nil {
					return true, &Error{Vendor: TypeModal, Op: op, Msg: "the answer is not the expected message"}
				}
				result = r
				return result.uint(1) != modalStatusUnspecified, nil
			})
		if err != nil {
			if wctx.Err() != nil && ctx.Err() == nil {
				return "", &Error{Vendor: TypeModal, Op: op, Msg: "the image was not built in time"}
			}
			return "", err
		}
	}
	if result.uint(1) != modalStatusSuccess {
		return "", &Error{Vendor: TypeModal, Op: op, Msg: "the image build failed (is the registry image public and named right?)"}
	}
	return id, nil
}

// waitTask asks for the sandbox's task until it is scheduled.
func (d *Modal) waitTask(ctx context.Context, a modalAPI, sandboxID string) (string, error) {
	const op = "wait for the sandbox"
	ctx, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	for {
		resp, err := a.call(ctx, op, "SandboxGetTaskId", pbMsg{}.str(1, sandboxID).float(2, 10).boolean(3, true))
		if err != nil {
			if ctx.Err() != nil {
				return "", &Error{Vendor: TypeModal, Op: op, Msg: "it did not start in time"}
			}
			return "", modalGone(err)
		}
		if resp.has(2) { // task_result: it ended already
			return "", goneError(TypeModal, op, "ended")
		}
		if id := resp.str(1); id != "" {
			return id, nil
		}
		select {
		case <-ctx.Done():
			return "", &Error{Vendor: TypeModal, Op: op, Msg: "it did not start in time"}
		case <-time.After(d.poll):
		}
	}
}

func (d *Modal) parse(spec sandbox.Spec, h sandbox.Handle) (modalAPI, modalHandle, error) {
	a, _, _, err := d.setup(spec)
	if err != nil {
		return modalAPI{}, modalHandle{}, err
	}
	var mh modalHandle
	if err := json.Unmarshal(h, &mh); err != nil || mh.SandboxID == "" || mh.TaskID == "" || !strings.HasPrefix(mh.Workdir, "/") {
		return modalAPI{}, modalHandle{}, configError(TypeModal, "invalid handle")
	}
	return a, mh, nil
}

// Open checks that the sandbox still runs; one that ended (terminated, timed
// out, its entrypoint exited) or is unknown is gone.
func (d *Modal) Open(ctx context.Context, spec sandbox.Spec, h sandbox.Handle) (sandbox.Instance, error) {
	a, mh, err := d.parse(spec, h)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	// A zero time-out makes SandboxWait answer at once.
	resp, err := a.call(cctx, "read sandbox", "SandboxWait", pbMsg{}.str(1, mh.SandboxID))
	if err != nil {
		return nil, modalGone(err)
	}
	result, err := resp.sub(1)
	if err != nil {
		return nil, &Error{Vendor: TypeModal, Op: "read sandbox", Msg: "the answer is not the expected message"}
	}
	if result.uint(1) != modalStatusUnspecified {
		return nil, goneError(TypeModal, "read sandbox", "ended")
	}
	return &modalInstance{a: a, h: mh}, nil
}

// Stop is unsupported: Modal sandboxes cannot be stopped and resumed.
func (d *Modal) Stop(context.Context, sandbox.Spec, sandbox.Handle) error {
	return fmt.Errorf("envhosted: modal: stop: %w (a sandbox can only be terminated)", sandbox.ErrUnsupported)
}

// Renew is unsupported: Modal has no call to extend a running sandbox's
// time-out, which is fixed when it is made (the template's timeout_seconds).
func (d *Modal) Renew(context.Context, sandbox.Spec, sandbox.Handle) error {
	return fmt.Errorf("envhosted: modal: renew: %w (a sandbox's time-out is fixed when it is made)", sandbox.ErrUnsupported)
}

// Destroy terminates the sandbox; one already ended or unknown counts as
// destroyed (terminating an ended sandbox succeeds at Modal).
func (d *Modal) Destroy(ctx context.Context, spec sandbox.Spec, h sandbox.Handle) error {
	a, mh, err := d.parse(spec, h)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	_, err = a.call(ctx, "terminate sandbox", "SandboxTerminate", pbMsg{}.str(1, mh.SandboxID))
	if errors.Is(err, sandbox.ErrNotFound) {
		return nil
	}
	return err
}

var _ sandbox.Driver = (*Modal)(nil)
