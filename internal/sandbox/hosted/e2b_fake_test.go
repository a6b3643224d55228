package hosted

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeE2B speaks E2B's REST API (on api.<domain>) and envd's Connect and
// files API (on 49983-<id>.<domain>) for sandboxes backed by temporary
// directories, running commands as local processes.
type fakeE2B struct {
	t      *testing.T
	key    string
	domain string // with the server's port
	rec    recorder

	mu        sync.Mutex
	next      int
	sandboxes map[string]*e2bBox
}

type e2bBox struct {
	*box
	token   string
	state   string // running, paused
	timeout int
	procs   map[uint32]*fakeProc
}

type fakeProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

func newFakeE2B(t *testing.T) *fakeE2B {
	return &fakeE2B{t: t, key: "e2b_test_key_123", sandboxes: map[string]*e2bBox{}}
}

func (f *fakeE2B) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.rec.add(r, body)
	host, _, _ := strings.Cut(r.Host, ":")
	if host == "api.e2b.test" {
		f.api(w, r, body)
		return
	}
	id, ok := strings.CutPrefix(strings.TrimSuffix(host, ".e2b.test"), "49983-")
	f.mu.Lock()
	sb := f.sandboxes[id]
	f.mu.Unlock()
	if !ok || sb == nil || sb.state != "running" {
		writeJSON(w, http.StatusBadGateway, map[string]any{"message": "The sandbox was not found", "code": 502})
		return
	}
	if r.Header.Get("X-Access-Token") != sb.token || r.Header.Get("Authorization") != "Basic "+base64.StdEncoding.EncodeToString([]byte("user:")) {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"code": 401, "message": "unauthorized"})
		return
	}
	f.envd(w, r, sb, body)
}

func (f *fakeE2B) api(w http.ResponseWriter, r *http.Request, body []byte) {
	if r.Header.Get("X-API-KEY") != f.key {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"code": 401, "message": "Invalid API key " + r.Header.Get("X-API-KEY")})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if r.Method == http.MethodPost && r.URL.Path == "/sandboxes" {
		var req struct {
			TemplateID string `json:"templateID"`
			Timeout    int    `json:"timeout"`
		}
		_ = json.Unmarshal(body, &req)
		f.next++
		id := fmt.Sprintf("sbx%d", f.next)
		sb := &e2bBox{box: newBox(f.t, "/home/user"), token: "envd-token-" + id, state: "running", timeout: req.Timeout, procs: map[uint32]*fakeProc{}}
		f.sandboxes[id] = sb
		writeJSON(w, http.StatusCreated, map[string]any{
			"templateID": req.TemplateID, "sandboxID": id, "clientID": "c", "envdVersion": "0.2.0",
			"envdAccessToken": sb.token, "domain": f.domain,
		})
		return
	}
	if len(parts) < 2 || parts[0] != "sandboxes" {
		writeJSON(w, http.StatusNotFound, map[string]any{"code": 404, "message": "no route"})
		return
	}
	sb := f.sandboxes[parts[1]]
	if sb == nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"code": 404, "message": "sandbox " + parts[1] + " not found"})
		return
	}
	var req struct {
		Timeout int `json:"timeout"`
	}
	_ = json.Unmarshal(body, &req)
	switch {
	case r.Method == http.MethodDelete && len(parts) == 2:
		delete(f.sandboxes, parts[1])
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodPost && len(parts) == 3 && parts[2] == "pause":
		if sb.state == "paused" {
			writeJSON(w, http.StatusConflict, map[string]any{"code": 409, "message": "already paused"})
			return
		}
		sb.state = "paused"
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodPost && len(parts) == 3 && parts[2] == "connect":
		status := http.StatusOK
		if sb.state == "paused" {
			sb.state, status = "running", http.StatusCreated
		}
		sb.timeout = max(sb.timeout, req.Timeout)
		writeJSON(w, status, map[string]any{"templateID": "base", "sandboxID": parts[1], "clientID": "c", "envdVersion": "0.2.0", "envdAccessToken": sb.token, "domain": f.domain})
	case r.Method == http.MethodPost && len(parts) == 3 && parts[2] == "timeout":
		sb.timeout = req.Timeout
		w.WriteHeader(http.StatusNoContent)
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"code": 404, "message": "no route"})
	}
}

func connectError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"code": code, "message": msg})
}

func (f *fakeE2B) envd(w http.ResponseWriter, r *http.Request, sb *e2bBox, body []byte) {
	switch r.URL.Path {
	case "/files":
		p := r.URL.Query().Get("path")
		if r.URL.Query().Get("username") != "user" {
			connectError(w, http.StatusBadRequest, "invalid_argument", "username")
			return
		}
		if r.Method == http.MethodGet {
			data, err := os.ReadFile(sb.host(p))
			if err != nil {
				writeJSON(w, http.StatusNotFound, map[string]any{"code": 404, "message": "path not found: " + p})
				return
			}
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = w.Write(data)
			return
		}
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		if err := r.ParseMultipartForm(32 << 20); err != nil {
			connectError(w, http.StatusBadRequest, "invalid_argument", "multipart")
			return
		}
		file, _, err := r.FormFile("file")
		if err != nil {
			connectError(w, http.StatusBadRequest, "invalid_argument", "file part")
			return
		}
		data, _ := io.ReadAll(file)
		_ = os.MkdirAll(filepath.Dir(sb.host(p)), 0o755)
		if err := os.WriteFile(sb.host(p), data, 0o644); err != nil {
			connectError(w, http.StatusInternalServerError, "internal", err.Error())
			return
		}
		writeJSON(w, http.StatusOK, []map[string]any{{"name": filepath.Base(p), "type": "file", "path": p}})
	case "/filesystem.Filesystem/ListDir":
		var req struct {
			Path  string `json:"path"`
			Depth int    `json:"depth"`
		}
		_ = json.Unmarshal(body, &req)
		des, err := os.ReadDir(sb.host(req.Path))
		if err != nil {
			connectError(w, http.StatusNotFound, "not_found", "directory not found")
			return
		}
		var entries []map[string]any
		for _, de := range des {
			info, _ := de.Info()
			typ := "FILE_TYPE_FILE"
			if de.IsDir() {
				typ = "FILE_TYPE_DIRECTORY"
			}
			entries = append(entries, map[string]any{
				"name": de.Name(), "type": typ, "path": req.Path + "/" + de.Name(),
				"size": fmt.Sprint(info.Size()), "mode": 420, "permissions": "-rw-r--r--",
				"owner": "user", "group": "user", "modifiedTime": info.ModTime().UTC().Format(time.RFC3339Nano),
			})
		}
		writeJSON(w, http.StatusOK, map[string]any{"entries": entries})
	case "/process.Process/Start":
		f.start(w, r, sb, body)
	case "/process.Process/SendInput", "/process.Process/CloseStdin", "/process.Process/SendSignal":
		var req struct {
			Process struct {
				PID uint32 `json:"pid"`
			} `json:"process"`
			Input struct {
				Stdin []byte `json:"stdin"`
			} `json:"input"`
			Signal string `json:"signal"`
		}
		_ = json.Unmarshal(body, &req)
		f.mu.Lock()
		p := sb.procs[req.Process.PID]
		f.mu.Unlock()
		if p == nil {
			connectError(w, http.StatusNotFound, "not_found", "process not found")
			return
		}
		switch r.URL.Path {
		case "/process.Process/SendInput":
			_, _ = p.stdin.Write(req.Input.Stdin)
		case "/process.Process/CloseStdin":
			_ = p.stdin.Close()
		default:
			if req.Signal == "SIGNAL_SIGKILL" {
				_ = p.cmd.Process.Kill()
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{})
	default:
		connectError(w, http.StatusNotFound, "unimplemented", "no route")
	}
}

// start runs process.Process/Start: a Connect server stream of events.
func (f *fakeE2B) start(w http.ResponseWriter, r *http.Request, sb *e2bBox, body []byte) {
	if r.Header.Get("Content-Type") != "application/connect+json" || len(body) < 5 {
		connectError(w, http.StatusUnsupportedMediaType, "unknown", "content type")
		return
	}
	var req struct {
		Process struct {
			Cmd  string            `json:"cmd"`
			Args []string          `json:"args"`
			Envs map[string]string `json:"envs"`
			Cwd  string            `json:"cwd"`
		} `json:"process"`
		Stdin bool `json:"stdin"`
	}
	if err := json.Unmarshal(body[5:5+binary.BigEndian.Uint32(body[1:5])], &req); err != nil {
		connectError(w, http.StatusBadRequest, "invalid_argument", "json")
		return
	}
	w.Header().Set("Content-Type", "application/connect+json")
	w.WriteHeader(http.StatusOK)
	var wmu sync.Mutex
	send := func(flags byte, v any) {
		b, _ := json.Marshal(v)
		hdr := make([]byte, 5)
		hdr[0] = flags
		binary.BigEndian.PutUint32(hdr[1:], uint32(len(b)))
		wmu.Lock()
		defer wmu.Unlock()
		_, _ = w.Write(append(hdr, b...))
		w.(http.Flusher).Flush()
	}
	cmd := exec.Command(req.Process.Cmd, req.Process.Args...)
	cmd.Dir = sb.host(req.Process.Cwd)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + sb.host("/home/user")}
	for k, v := range req.Process.Envs {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdin io.WriteCloser
	if req.Stdin {
		stdin, _ = cmd.StdinPipe()
	}
	outR, _ := cmd.StdoutPipe()
	errR, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		send(flagEndStream, map[string]any{"error": map[string]any{"code": "invalid_argument", "message": err.Error()}})
		return
	}
	pid := uint32(cmd.Process.Pid)
	f.mu.Lock()
	sb.procs[pid] = &fakeProc{cmd: cmd, stdin: stdin}
	f.mu.Unlock()
	send(0, map[string]any{"event": map[string]any{"start": map[string]any{"pid": pid}}})
	var wg sync.WaitGroup
	pump := func(rd io.Reader, stream string) {
		defer wg.Done()
		buf := make([]byte, 4096)
		for {
			n, err := rd.Read(buf)
			if n > 0 {
				send(0, map[string]any{"event": map[string]any{"data": map[string]any{stream: buf[:n]}}})
			}
			if err != nil {
				return
			}
		}
	}
	wg.Add(2)
	go pump(outR, "stdout")
	go pump(errR, "stderr")
	wg.Wait()
	_ = cmd.Wait()
	code, exited := exitCode(cmd)
	send(0, map[string]any{"event": map[string]any{"end": map[string]any{"exitCode": code, "exited": exited, "status": cmd.ProcessState.String()}}})
	send(flagEndStream, map[string]any{})
}
