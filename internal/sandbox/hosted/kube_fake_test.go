package hosted

import (
	"bufio"
	"crypto/sha1" //nolint:gosec // RFC 6455 handshake
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeKube speaks the Kubernetes pods API and pod exec over WebSocket
// (v5.channel.k8s.io) for pods backed by temporary directories (the
// container user's HOME); exec runs the command on the host.
type fakeKube struct {
	t     *testing.T
	token string
	ns    string
	rec   recorder

	mu   sync.Mutex
	pods map[string]*kubeBox
}

type kubeBox struct {
	home  string
	phase string
	body  []byte
}

func newFakeKube(t *testing.T) *fakeKube {
	return &fakeKube{t: t, token: "eyJhbGciOi.sa-token", ns: "sandboxes", pods: map[string]*kubeBox{}}
}

func kubeStatusJSON(code int, reason, msg string) map[string]any {
	return map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": msg, "reason": reason, "code": code}
}

func (f *fakeKube) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.rec.add(r, body)
	if r.Header.Get("Authorization") != "Bearer "+f.token {
		writeJSON(w, http.StatusUnauthorized, kubeStatusJSON(401, "Unauthorized", "token "+r.Header.Get("Authorization")+" is invalid"))
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/api/v1/namespaces/"+f.ns+"/pods")
	if !ok {
		writeJSON(w, http.StatusForbidden, kubeStatusJSON(403, "Forbidden", "namespace"))
		return
	}
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	f.mu.Lock()
	if r.Method == http.MethodPost && rest == "" {
		var pod struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		_ = json.Unmarshal(body, &pod)
		if f.pods[pod.Metadata.Name] != nil {
			f.mu.Unlock()
			writeJSON(w, http.StatusConflict, kubeStatusJSON(409, "AlreadyExists", "pods already exists"))
			return
		}
		f.pods[pod.Metadata.Name] = &kubeBox{home: f.t.TempDir(), phase: "Pending", body: body}
		f.mu.Unlock()
		f.pod(w, http.StatusCreated, pod.Metadata.Name)
		return
	}
	p := f.pods[parts[0]]
	if p == nil {
		f.mu.Unlock()
		writeJSON(w, http.StatusNotFound, kubeStatusJSON(404, "NotFound", `pods "`+parts[0]+`" not found`))
		return
	}
	switch {
	case r.Method == http.MethodGet && len(parts) == 1:
		if p.phase == "Pending" {
			p.phase = "Running"
		}
		f.mu.Unlock()
		f.pod(w, http.StatusOK, parts[0])
	case r.Method == http.MethodDelete && len(parts) == 1:
		delete(f.pods, parts[0])
		f.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"kind": "Pod"})
	case r.Method == http.MethodGet && len(parts) == 2 && parts[1] == "exec" && p.phase == "Running":
		f.mu.Unlock()
		f.exec(w, r, p)
	default:
		f.mu.Unlock()
		writeJSON(w, http.StatusBadRequest, kubeStatusJSON(400, "BadRequest", "pod is "+p.phase))
	}
}

func (f *fakeKube) pod(w http.ResponseWriter, status int, name string) {
	f.mu.Lock()
	p := f.pods[name]
	cs := []map[string]any{{"name": "sandbox", "ready": p.phase == "Running", "state": map[string]any{"waiting": map[string]any{"reason": "ContainerCreating"}}}}
	if p.phase == "Running" {
		cs[0]["state"] = map[string]any{"running": map[string]any{"startedAt": "2026-01-01T00:00:00Z"}}
	}
	f.mu.Unlock()
	writeJSON(w, status, map[string]any{"kind": "Pod", "apiVersion": "v1", "metadata": map[string]any{"name": name, "namespace": f.ns},
		"status": map[string]any{"phase": p.phase, "containerStatuses": cs}})
}

// serverFrame writes one unmasked binary frame.
func serverFrame(w io.Writer, op byte, p []byte) error {
	hdr := []byte{0x80 | op}
	switch n := len(p); {
	case n < 126:
		hdr = append(hdr, byte(n))
	case n <= 0xFFFF:
		hdr = append(hdr, 126)
		hdr = binary.BigEndian.AppendUint16(hdr, uint16(n))
	default:
		hdr = append(hdr, 127)
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	_, err := w.Write(append(hdr, p...))
	return err
}

func (f *fakeKube) exec(w http.ResponseWriter, r *http.Request, p *kubeBox) {
	if r.Header.Get("Upgrade") != "websocket" || r.Header.Get("Sec-WebSocket-Protocol") != "v5.channel.k8s.io" {
		writeJSON(w, http.StatusBadRequest, kubeStatusJSON(400, "BadRequest", "upgrade required"))
		return
	}
	q := r.URL.Query()
	if q.Get("container") != "sandbox" || q.Get("stdout") != "true" || q.Get("stderr") != "true" {
		writeJSON(w, http.StatusBadRequest, kubeStatusJSON(400, "BadRequest", "streams"))
		return
	}
	conn, brw, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	sum := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + wsGUID)) //nolint:gosec // RFC 6455
	_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
		base64.StdEncoding.EncodeToString(sum[:]) + "\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n")
	_ = brw.Flush()
	var wmu sync.Mutex
	send := func(ch byte, data []byte) {
		wmu.Lock()
		defer wmu.Unlock()
		_ = serverFrame(conn, wsOpBinary, append([]byte{ch}, data...))
	}
	// A ping first: the client must answer it and carry on.
	wmu.Lock()
	_ = serverFrame(conn, wsOpPing, []byte("hi"))
	wmu.Unlock()

	argv := q["command"]
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = p.home
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + p.home}
	var stdin io.WriteCloser
	if q.Get("stdin") == "true" {
		stdin, _ = cmd.StdinPipe()
	}
	outR, _ := cmd.StdoutPipe()
	errR, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		st, _ := json.Marshal(kubeStatusJSON(500, "InternalError", "exec failed"))
		send(kubeChanStatus, st)
		return
	}
	client := &wsConn{rwc: conn, r: bufio.NewReader(brw)}
	go func() {
		for {
			msg, err := client.ReadMessage()
			if err != nil {
				_ = cmd.Process.Kill() // the client went away
				return
			}
			switch {
			case len(msg) == 2 && msg[0] == kubeChanClose && msg[1] == kubeChanStdin && stdin != nil:
				_ = stdin.Close()
			case len(msg) > 0 && msg[0] == kubeChanStdin && stdin != nil:
				_, _ = stdin.Write(msg[1:])
			}
		}
	}()
	var wg sync.WaitGroup
	pump := func(rd io.Reader, ch byte) {
		defer wg.Done()
		buf := make([]byte, 8192)
		for {
			n, err := rd.Read(buf)
			if n > 0 {
				send(ch, buf[:n])
			}
			if err != nil {
				return
			}
		}
	}
	wg.Add(2)
	go pump(outR, kubeChanStdout)
	go pump(errR, kubeChanStderr)
	wg.Wait()
	_ = cmd.Wait()
	status := map[string]any{"metadata": map[string]any{}, "status": "Success"}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		status = map[string]any{"metadata": map[string]any{}, "status": "Failure", "message": "command terminated with non-zero exit code",
			"reason": "NonZeroExitCode", "details": map[string]any{"causes": []map[string]any{{"reason": "ExitCode", "message": strconv.Itoa(code)}}}}
	}
	st, _ := json.Marshal(status)
	send(kubeChanStatus, st)
	wmu.Lock()
	_ = serverFrame(conn, wsOpClose, nil)
	wmu.Unlock()
}
