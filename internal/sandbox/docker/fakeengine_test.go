package docker

import (
	"archive/tar"
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fakeEngine is a stand-in for a Docker Engine that speaks the Engine API's
// wire protocol for the endpoints the driver uses, with real semantics: a
// container is a directory (its root file system) on this machine, an exec
// runs its command here in the container's working directory with exactly
// the exec's environment, its output is sent in the engine's multiplexed
// framing over a hijacked connection (upgraded with 101 when asked), what the
// client writes on that connection is the command's standard input when the
// exec attaches it, archives are real tar streams, and errors are the
// engine's {"message": ...} answers.
type fakeEngine struct {
	*httptest.Server
	Socket string
	dir    string

	mu         sync.Mutex
	images     map[string]bool   // present, "repo:tag"
	registry   map[string]bool   // pullable, "repo:tag"
	pullErrors map[string]string // pull fails mid-stream with this message
	imageUsers map[string]string // an image's own user (USER), "repo:tag"; absent is root
	containers map[string]*fakeContainer
	names      map[string]string // name -> id
	execs      map[string]*fakeExec
	requests   []string
	raw        []string               // "METHOD request-URI", as sent
	bodies     map[string][]byte      // last body per "METHOD path"
	headers    map[string]http.Header // last headers per "METHOD path"
	// noUpgrade makes exec start answer 200 and hijack even when the client
	// asks for the upgrade, as engines before the upgrade handshake did.
	noUpgrade bool
}

type fakeContainer struct {
	id, name string
	config   wireContainer
	rootfs   string
	status   string // created, running, exited
}

// wireContainer is the Engine API's container create body, as the engine reads it.
type wireContainer struct {
	Image      string
	Entrypoint []string
	Cmd        []string
	WorkingDir string
	User       string
	Labels     map[string]string
	OpenStdin  bool
	HostConfig struct {
		NanoCpus    int64
		Memory      int64
		NetworkMode string
		SecurityOpt []string
		Init        bool
	}
}

type wireExec struct {
	AttachStdin                bool
	AttachStdout, AttachStderr bool
	Env                        []string
	WorkingDir                 string
	Cmd                        []string
}

type fakeExec struct {
	id, container string
	config        wireExec
	running       bool
	exitCode      *int
	pid           int
}

const fakeAPIVersion = "1.47"

// startFakeEngine serves a stand-in engine on a Unix socket.
func startFakeEngine(t *testing.T) *fakeEngine {
	t.Helper()
	e := newFakeEngine(t)
	// Socket paths are limited to about 100 bytes; t.TempDir() can be longer.
	sockDir, err := os.MkdirTemp("", "eng")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(sockDir) })
	e.Socket = filepath.Join(sockDir, "docker.sock")
	ln, err := net.Listen("unix", e.Socket)
	if err != nil {
		t.Fatal(err)
	}
	e.Server = httptest.NewUnstartedServer(http.HandlerFunc(e.serve))
	_ = e.Listener.Close()
	e.Listener = ln
	e.Start()
	t.Cleanup(e.shutdown)
	return e
}

func newFakeEngine(t *testing.T) *fakeEngine {
	return &fakeEngine{
		dir:        t.TempDir(),
		images:     map[string]bool{},
		registry:   map[string]bool{"alpine:3.21": true, "python:3.13-slim": true, "ghcr.io/acme/tools:1.2": true},
		pullErrors: map[string]string{},
		imageUsers: map[string]string{"ghcr.io/acme/tools:1.2": "1000:1000"},
		containers: map[string]*fakeContainer{},
		names:      map[string]string{},
		execs:      map[string]*fakeExec{},
		bodies:     map[string][]byte{},
		headers:    map[string]http.Header{},
	}
}

// shutdown kills what execs still run and stops the server.
func (e *fakeEngine) shutdown() {
	e.mu.Lock()
	for _, x := range e.execs {
		if x.running && x.pid > 0 {
			_ = syscall.Kill(-x.pid, syscall.SIGKILL)
		}
	}
	e.mu.Unlock()
	e.Close()
}

// Requests lists "METHOD path" of every request, version prefix removed.
func (e *fakeEngine) Requests() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.requests...)
}

// RawRequests lists "METHOD request-URI" of every request, as sent.
func (e *fakeEngine) RawRequests() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.raw...)
}

// Header is the last header sent with "METHOD path".
func (e *fakeEngine) Header(key string) http.Header {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.headers[key]
}

// Body is the last body sent with "METHOD path".
func (e *fakeEngine) Body(key string) []byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.bodies[key]
}

func (e *fakeEngine) container(ref string) *fakeContainer {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lookup(ref)
}

func (e *fakeEngine) lookup(ref string) *fakeContainer {
	if id, ok := e.names[strings.TrimPrefix(ref, "/")]; ok {
		ref = id
	}
	return e.containers[ref]
}

var versionPrefix = regexp.MustCompile(`^/v1\.[0-9]+/`)

func (e *fakeEngine) serve(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if loc := versionPrefix.FindStringIndex(p); loc != nil {
		p = p[loc[1]-1:]
	}
	body, _ := io.ReadAll(r.Body)
	e.mu.Lock()
	e.requests = append(e.requests, r.Method+" "+p)
	e.raw = append(e.raw, r.Method+" "+r.URL.RequestURI())
	e.bodies[r.Method+" "+p] = body
	e.headers[r.Method+" "+p] = r.Header.Clone()
	e.mu.Unlock()
	w.Header().Set("Api-Version", fakeAPIVersion)
	w.Header().Set("Server", "Docker/27.5.1 (linux)")
	seg := strings.Split(strings.Trim(p, "/"), "/")
	switch {
	case p == "/_ping" && r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("OK"))
	case seg[0] == "images" && r.Method == http.MethodGet && len(seg) >= 3 && seg[len(seg)-1] == "json":
		e.imageInspect(w, strings.Join(seg[1:len(seg)-1], "/"))
	case p == "/images/create" && r.Method == http.MethodPost:
		e.pull(w, r)
	case p == "/containers/create" && r.Method == http.MethodPost:
		e.create(w, r, body)
	case seg[0] == "containers" && len(seg) == 2 && r.Method == http.MethodDelete:
		e.remove(w, r, seg[1])
	case seg[0] == "containers" && len(seg) == 3:
		e.containerOp(w, r, seg[1], seg[2], body)
	case seg[0] == "exec" && len(seg) == 3 && seg[2] == "start" && r.Method == http.MethodPost:
		e.execStart(w, r, seg[1], body)
	case seg[0] == "exec" && len(seg) == 3 && seg[2] == "json" && r.Method == http.MethodGet:
		e.execInspect(w, seg[1])
	default:
		engineErr(w, http.StatusNotFound, "page not found")
	}
}

func engineErr(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func randomHex(n int) string {
	b := make([]byte, n/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (e *fakeEngine) imageInspect(w http.ResponseWriter, name string) {
	if !strings.Contains(name[strings.LastIndex(name, "/")+1:], ":") {
		name += ":latest"
	}
	e.mu.Lock()
	ok, user := e.images[name], e.imageUsers[name]
	e.mu.Unlock()
	if !ok {
		engineErr(w, http.StatusNotFound, "No such image: "+name)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"Id": "sha256:" + randomHex(64), "RepoTags": []string{name}, "Config": map[string]any{"User": user}})
}

// pull answers 200 and streams progress; failures come inside the stream.
func (e *fakeEngine) pull(w http.ResponseWriter, r *http.Request) {
	repo, tag := r.URL.Query().Get("fromImage"), r.URL.Query().Get("tag")
	ref := repo + ":" + tag
	if strings.HasPrefix(tag, "sha256:") {
		ref = repo + "@" + tag
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	_ = enc.Encode(map[string]string{"status": "Pulling from " + repo, "id": tag})
	e.mu.Lock()
	known, failure := e.registry[ref], e.pullErrors[ref]
	e.mu.Unlock()
	if failure == "" && !known {
		failure = "pull access denied for " + repo + ", repository does not exist or may require 'docker login': denied: requested access to the resource is denied"
	}
	if failure != "" {
		_ = enc.Encode(map[string]any{"errorDetail": map[string]string{"message": failure}, "error": failure})
		return
	}
	_ = enc.Encode(map[string]any{"status": "Downloading", "progressDetail": map[string]int{"current": 1, "total": 2}, "id": "f18232174bc9"})
	_ = enc.Encode(map[string]string{"status": "Digest: sha256:" + randomHex(64)})
	_ = enc.Encode(map[string]string{"status": "Status: Downloaded newer image for " + ref})
	e.mu.Lock()
	e.images[ref] = true
	e.mu.Unlock()
}

func (e *fakeEngine) create(w http.ResponseWriter, r *http.Request, body []byte) {
	var cfg wireContainer
	if err := json.Unmarshal(body, &cfg); err != nil {
		engineErr(w, http.StatusBadRequest, "invalid JSON: "+err.Error())
		return
	}
	name := r.URL.Query().Get("name")
	e.mu.Lock()
	defer e.mu.Unlock()
	img := cfg.Image
	if !strings.Contains(img[strings.LastIndex(img, "/")+1:], ":") {
		img += ":latest"
	}
	if !e.images[img] {
		engineErr(w, http.StatusNotFound, "No such image: "+img)
		return
	}
	if id, ok := e.names[name]; ok {
		engineErr(w, http.StatusConflict, fmt.Sprintf("Conflict. The container name \"/%s\" is already in use by container \"%s\". You have to remove (or rename) that container to be able to reuse that name.", name, id))
		return
	}
	id := randomHex(64)
	c := &fakeContainer{id: id, name: name, config: cfg, rootfs: filepath.Join(e.dir, id), status: "created"}
	// The engine creates the working directory.
	if err := os.MkdirAll(filepath.Join(c.rootfs, filepath.FromSlash(cfg.WorkingDir)), 0o755); err != nil {
		engineErr(w, http.StatusInternalServerError, err.Error())
		return
	}
	_ = os.MkdirAll(filepath.Join(c.rootfs, "tmp"), 0o1777)
	e.containers[id] = c
	if name != "" {
		e.names[name] = id
	}
	writeJSON(w, http.StatusCreated, map[string]any{"Id": id, "Warnings": []string{}})
}

func (e *fakeEngine) remove(w http.ResponseWriter, r *http.Request, ref string) {
	e.mu.Lock()
	c := e.lookup(ref)
	if c == nil {
		e.mu.Unlock()
		engineErr(w, http.StatusNotFound, "No such container: "+ref)
		return
	}
	if c.status == "running" && r.URL.Query().Get("force") != "1" {
		e.mu.Unlock()
		engineErr(w, http.StatusConflict, "cannot remove container \"/"+c.name+"\": container is running: stop the container before removing or force remove")
		return
	}
	e.killExecsLocked(c.id)
	delete(e.containers, c.id)
	delete(e.names, c.name)
	e.mu.Unlock()
	_ = os.RemoveAll(c.rootfs)
	w.WriteHeader(http.StatusNoContent)
}

// killExecsLocked kills the process groups of the container's running execs,
// as stopping a container ends every process in it.
func (e *fakeEngine) killExecsLocked(id string) {
	for _, x := range e.execs {
		if x.container == id && x.running && x.pid > 0 {
			_ = syscall.Kill(-x.pid, syscall.SIGKILL)
		}
	}
}

func (e *fakeEngine) containerOp(w http.ResponseWriter, r *http.Request, ref, op string, body []byte) {
	e.mu.Lock()
	c := e.lookup(ref)
	e.mu.Unlock()
	if c == nil {
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		engineErr(w, http.StatusNotFound, "No such container: "+ref)
		return
	}
	switch {
	case op == "json" && r.Method == http.MethodGet:
		e.mu.Lock()
		st := c.status
		e.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{
			"Id": c.id, "Name": "/" + c.name, "Image": "sha256:" + randomHex(64),
			"State":  map[string]any{"Status": st, "Running": st == "running", "Paused": false, "Pid": 4242},
			"Config": map[string]any{"Image": c.config.Image, "WorkingDir": c.config.WorkingDir, "Labels": c.config.Labels, "User": c.config.User},
		})
	case op == "start" && r.Method == http.MethodPost:
		e.mu.Lock()
		defer e.mu.Unlock()
		if c.status == "running" {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		c.status = "running"
		w.WriteHeader(http.StatusNoContent)
	case op == "stop" && r.Method == http.MethodPost:
		e.mu.Lock()
		defer e.mu.Unlock()
		if c.status != "running" {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		e.killExecsLocked(c.id)
		c.status = "exited"
		w.WriteHeader(http.StatusNoContent)
	case op == "exec" && r.Method == http.MethodPost:
		var cfg wireExec
		if err := json.Unmarshal(body, &cfg); err != nil || len(cfg.Cmd) == 0 {
			engineErr(w, http.StatusBadRequest, "No exec command specified")
			return
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		if c.status != "running" {
			engineErr(w, http.StatusConflict, "container "+c.id+" is not running")
			return
		}
		id := randomHex(64)
		e.execs[id] = &fakeExec{id: id, container: c.id, config: cfg}
		writeJSON(w, http.StatusCreated, map[string]string{"Id": id})
	case op == "archive":
		e.archive(w, r, c, body)
	default:
		engineErr(w, http.StatusNotFound, "page not found")
	}
}

func (e *fakeEngine) execInspect(w http.ResponseWriter, id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.execs[id]
	if x == nil {
		engineErr(w, http.StatusNotFound, "No such exec instance: "+id)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ID": x.id, "Running": x.running, "ExitCode": x.exitCode, "Pid": x.pid, "ContainerID": x.container})
}

// execStart runs the command and streams its output as the engine does: it
// hijacks the connection and answers either 101 UPGRADED (Connection:
// Upgrade, Upgrade: tcp, the multiplexed-stream content type) when the client
// sent an Upgrade header, or 200 with the raw-stream content type otherwise;
// then it writes frames, feeds what the client writes to the command's
// standard input when the exec attaches it, and half-closes the connection
// when the command ends, as the engine's CloseStreams does.
func (e *fakeEngine) execStart(w http.ResponseWriter, r *http.Request, id string, body []byte) {
	var start struct{ Detach, Tty bool }
	_ = json.Unmarshal(body, &start)
	e.mu.Lock()
	x := e.execs[id]
	var c *fakeContainer
	if x != nil {
		c = e.containers[x.container]
	}
	noUpgrade := e.noUpgrade
	e.mu.Unlock()
	if x == nil || c == nil {
		engineErr(w, http.StatusNotFound, "No such exec instance: "+id)
		return
	}
	hdr := w.Header().Clone()
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer func() { _ = conn.Close() }()
	if _, upgrade := r.Header["Upgrade"]; upgrade && !noUpgrade {
		_, _ = buf.WriteString("HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.multiplexed-stream\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n")
	} else {
		_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/vnd.docker.raw-stream\r\n")
	}
	_ = hdr.Write(buf)
	_, _ = buf.WriteString("\r\n")
	_ = buf.Flush()
	var stdin io.Reader
	if x.config.AttachStdin {
		stdin = buf.Reader // it may hold input read with the request
	}
	out := &frameWriter{w: buf}
	code, copied := e.runExec(c, x, out, stdin)
	e.mu.Lock()
	x.running, x.exitCode = false, &code
	e.mu.Unlock()
	_ = buf.Flush()
	if cw, ok := conn.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	if copied != nil {
		// Input the command left unread stays unread until the output has
		// ended; only then is the rest read off, so closing the connection
		// does not reset it under a client still reading the output.
		<-copied
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, _ = io.Copy(io.Discard, buf.Reader)
	}
}

// runExec runs the exec's command in the container's directory tree. With
// stdin, the command reads from a pipe fed from stdin until its end or until
// the command exits; copied is closed when that copy is over.
func (e *fakeEngine) runExec(c *fakeContainer, x *fakeExec, out *frameWriter, stdin io.Reader) (code int, copied <-chan struct{}) {
	dir := x.config.WorkingDir
	if dir == "" {
		dir = c.config.WorkingDir
	}
	hostDir, err := hostPath(c.rootfs, dir, true)
	if st, statErr := os.Stat(hostDir); err != nil || statErr != nil || !st.IsDir() {
		_, _ = out.stream(1).Write([]byte(fmt.Sprintf("OCI runtime exec failed: exec failed: unable to start container process: chdir to cwd (%q) set in config.json failed: no such file or directory: unknown\r\n", dir)))
		return 126, nil
	}
	env := append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOSTNAME=" + c.id[:12]}, x.config.Env...)
	prog, err := exec.LookPath(x.config.Cmd[0])
	if err != nil {
		_, _ = out.stream(1).Write([]byte(fmt.Sprintf("OCI runtime exec failed: exec failed: unable to start container process: exec: %q: executable file not found in $PATH: unknown\r\n", x.config.Cmd[0])))
		return 127, nil
	}
	cmd := &exec.Cmd{Path: prog, Args: x.config.Cmd, Dir: hostDir, Env: env, SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	if x.config.AttachStdout {
		cmd.Stdout = out.stream(1)
	}
	if x.config.AttachStderr {
		cmd.Stderr = out.stream(2)
	}
	var pipe io.WriteCloser
	if stdin != nil {
		if pipe, err = cmd.StdinPipe(); err != nil {
			_, _ = out.stream(1).Write([]byte("OCI runtime exec failed: " + err.Error()))
			return 126, nil
		}
	}
	e.mu.Lock()
	if err := cmd.Start(); err != nil {
		e.mu.Unlock()
		_, _ = out.stream(1).Write([]byte("OCI runtime exec failed: " + err.Error()))
		return 126, nil
	}
	x.running, x.pid = true, cmd.Process.Pid
	e.mu.Unlock()
	if pipe != nil {
		done := make(chan struct{})
		go func() {
			defer close(done)
			// Ends at the client's half-close, or when the command has
			// exited (Wait closes the pipe).
			_, _ = io.Copy(pipe, stdin)
			_ = pipe.Close()
		}()
		copied = done
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), copied
		}
		return ee.ExitCode(), copied
	}
	if err != nil {
		return 126, copied
	}
	return 0, copied
}

// frameWriter writes the engine's multiplexed frames: stream type, three zero
// bytes, big-endian uint32 length, payload.
type frameWriter struct {
	mu sync.Mutex
	w  *bufio.ReadWriter
}

type streamWriter struct {
	f  *frameWriter
	id byte
}

func (f *frameWriter) stream(id byte) io.Writer { return &streamWriter{f: f, id: id} }

func (s *streamWriter) Write(p []byte) (int, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	var hdr [8]byte
	hdr[0] = s.id
	binary.BigEndian.PutUint32(hdr[4:], uint32(len(p)))
	if _, err := s.f.w.Write(hdr[:]); err != nil {
		return 0, err
	}
	if _, err := s.f.w.Write(p); err != nil {
		return 0, err
	}
	return len(p), s.f.w.Flush()
}

// hostPath maps a container path to the host path under rootfs, resolving
// symbolic links in the container's scope (an absolute target is relative to
// the container's root; `..` never climbs above it), as the engine does. The
// final component is followed only when follow is set.
func hostPath(rootfs, p string, follow bool) (string, error) {
	if !path.IsAbs(p) {
		return "", errors.New("not absolute")
	}
	parts := strings.Split(strings.Trim(path.Clean(p), "/"), "/")
	cur := "/"
	for hops := 0; len(parts) > 0; {
		part := parts[0]
		parts = parts[1:]
		if part == "" || part == "." {
			continue
		}
		if part == ".." {
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, part)
		st, err := os.Lstat(filepath.Join(rootfs, filepath.FromSlash(next)))
		if err != nil || st.Mode()&fs.ModeSymlink == 0 || (!follow && len(parts) == 0) {
			cur = next
			continue
		}
		if hops++; hops > 40 {
			return "", errors.New("too many links")
		}
		target, err := os.Readlink(filepath.Join(rootfs, filepath.FromSlash(next)))
		if err != nil {
			return "", err
		}
		if path.IsAbs(target) {
			cur = "/"
		}
		parts = append(strings.Split(strings.Trim(target, "/"), "/"), parts...)
	}
	return filepath.Join(rootfs, filepath.FromSlash(cur)), nil
}

// containerPath is the inverse of hostPath for a resolved host path.
func containerPath(rootfs, host string) string {
	rel, _ := filepath.Rel(rootfs, host)
	return path.Join("/", filepath.ToSlash(rel))
}

func (e *fakeEngine) archive(w http.ResponseWriter, r *http.Request, c *fakeContainer, body []byte) {
	p := r.URL.Query().Get("path")
	host, err := hostPath(c.rootfs, p, false)
	if err != nil {
		engineErr(w, http.StatusBadRequest, "invalid path")
		return
	}
	st, err := os.Lstat(host)
	if err != nil {
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		engineErr(w, http.StatusNotFound, fmt.Sprintf("Could not find the file %s in container %s", p, c.id))
		return
	}
	stat := map[string]any{"name": st.Name(), "size": st.Size(), "mode": uint32(st.Mode()), "mtime": st.ModTime().Format(time.RFC3339Nano), "linkTarget": ""}
	if st.Mode()&fs.ModeSymlink != 0 {
		resolved, err := hostPath(c.rootfs, p, true)
		if err == nil {
			stat["linkTarget"] = containerPath(c.rootfs, resolved)
		}
	}
	sb, _ := json.Marshal(stat)
	w.Header().Set("X-Docker-Container-Path-Stat", base64.StdEncoding.EncodeToString(sb))
	switch r.Method {
	case http.MethodHead:
		w.WriteHeader(http.StatusOK)
	case http.MethodGet:
		w.Header().Set("Content-Type", "application/x-tar")
		w.WriteHeader(http.StatusOK)
		tw := tar.NewWriter(w)
		_ = writeTree(tw, host, st.Name())
		_ = tw.Close()
	case http.MethodPut:
		if !st.IsDir() {
			engineErr(w, http.StatusBadRequest, "extraction point is not a directory")
			return
		}
		if err := extract(host, body, r.URL.Query().Get("noOverwriteDirNonDir") == "1"); err != nil {
			engineErr(w, http.StatusInternalServerError, err.Error())
			return
		}
		w.WriteHeader(http.StatusOK)
	default:
		engineErr(w, http.StatusMethodNotAllowed, "method not allowed")
	}
}

// writeTree writes host (a file, link or directory tree) under name.
func writeTree(tw *tar.Writer, host, name string) error {
	return filepath.WalkDir(host, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(host, p)
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			link, _ = os.Readlink(p)
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		hdr.Name = path.Join(name, filepath.ToSlash(rel))
		if d.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(tw, f)
			return err
		}
		return nil
	})
}

// extract unpacks a tar under dir as the engine does (moby's createTarFile):
// an existing file is removed and written anew; a directory is kept.
func extract(dir string, body []byte, noOverwriteDirNonDir bool) error {
	tr := tar.NewReader(strings.NewReader(string(body)))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean(hdr.Name)
		if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("invalid name %q", hdr.Name)
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		fi, statErr := os.Lstat(target)
		switch hdr.Typeflag {
		case tar.TypeDir:
			if statErr == nil && fi.IsDir() {
				continue
			}
			if err := os.Mkdir(target, fs.FileMode(hdr.Mode)&fs.ModePerm); err != nil {
				return err
			}
		case tar.TypeReg:
			if statErr == nil {
				if fi.IsDir() && noOverwriteDirNonDir {
					return fmt.Errorf("cannot overwrite directory %q with non-directory %q", target, name)
				}
				if err := os.RemoveAll(target); err != nil {
					return err
				}
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY, fs.FileMode(hdr.Mode)&fs.ModePerm)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("unsupported entry %q", hdr.Name)
		}
	}
}
