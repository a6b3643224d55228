package hosted

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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

// fakeDaytona speaks Daytona's REST API (/sandbox...) and its toolbox API
// (/toolbox/<id>/...) for sandboxes backed by temporary directories; the
// toolbox splits commands the way Daytona's daemon does and runs them as
// local processes.
type fakeDaytona struct {
	t   *testing.T
	key string
	url string
	rec recorder

	mu        sync.Mutex
	next      int
	sandboxes map[string]*daytonaBox
}

type daytonaBox struct {
	dir   string
	state string
}

func newFakeDaytona(t *testing.T) *fakeDaytona {
	return &fakeDaytona{t: t, key: "dtn_test_key_456", sandboxes: map[string]*daytonaBox{}}
}

func (f *fakeDaytona) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.rec.add(r, body)
	if r.Header.Get("Authorization") != "Bearer "+f.key {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"statusCode": 401, "message": "Invalid API key " + r.Header.Get("Authorization")})
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	f.mu.Lock()
	defer f.mu.Unlock()
	if parts[0] == "toolbox" && len(parts) >= 3 {
		sb := f.sandboxes[parts[1]]
		if sb == nil || sb.state != "started" {
			writeJSON(w, http.StatusNotFound, map[string]any{"statusCode": 404, "message": "sandbox not found or not started"})
			return
		}
		f.toolbox(w, r, sb, "/"+strings.Join(parts[2:], "/"), body)
		return
	}
	if parts[0] != "sandbox" {
		writeJSON(w, http.StatusNotFound, map[string]any{"statusCode": 404})
		return
	}
	if r.Method == http.MethodPost && len(parts) == 1 {
		f.next++
		id := fmt.Sprintf("dt-%d", f.next)
		f.sandboxes[id] = &daytonaBox{dir: f.t.TempDir(), state: "creating"}
		f.answer(w, http.StatusOK, id)
		return
	}
	sb := f.sandboxes[parts[1]]
	if sb == nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"statusCode": 404, "message": "Sandbox with ID " + parts[1] + " not found"})
		return
	}
	switch {
	case r.Method == http.MethodGet && len(parts) == 2:
		// Transitions finish by the next read.
		switch sb.state {
		case "creating", "starting":
			sb.state = "started"
		case "stopping":
			sb.state = "stopped"
		}
		f.answer(w, http.StatusOK, parts[1])
	case r.Method == http.MethodDelete && len(parts) == 2:
		delete(f.sandboxes, parts[1])
		w.WriteHeader(http.StatusOK)
	case r.Method == http.MethodPost && len(parts) == 3 && parts[2] == "stop":
		if sb.state != "started" {
			writeJSON(w, http.StatusBadRequest, map[string]any{"statusCode": 400, "message": "Sandbox is not started"})
			return
		}
		sb.state = "stopping"
		f.answer(w, http.StatusOK, parts[1])
	case r.Method == http.MethodPost && len(parts) == 3 && parts[2] == "start":
		sb.state = "starting"
		f.answer(w, http.StatusOK, parts[1])
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"statusCode": 404})
	}
}

func (f *fakeDaytona) answer(w http.ResponseWriter, status int, id string) {
	writeJSON(w, status, map[string]any{
		"id": id, "organizationId": "org", "user": "daytona", "state": f.sandboxes[id].state,
		"toolboxProxyUrl": f.url + "/toolbox", "env": map[string]string{}, "labels": map[string]string{},
	})
}

// daytonaSplit is the daemon's parseCommand: spaces split outside quotes,
// quotes toggle without escapes.
func daytonaSplit(command string) []string {
	var args []string
	var cur bytes.Buffer
	var quote rune
	for _, r := range command {
		switch {
		case r == '"' || r == '\'':
			switch quote {
			case 0:
				quote = r
			case r:
				quote = 0
			default:
				cur.WriteRune(r)
			}
		case r == ' ' && quote == 0:
			if cur.Len() > 0 {
				args = append(args, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		args = append(args, cur.String())
	}
	return args
}

func (f *fakeDaytona) toolbox(w http.ResponseWriter, r *http.Request, sb *daytonaBox, route string, body []byte) {
	q := r.URL.Query().Get("path")
	switch {
	case route == "/work-dir":
		writeJSON(w, http.StatusOK, map[string]any{"dir": sb.dir})
	case route == "/process/execute":
		var req struct {
			Command string            `json:"command"`
			Cwd     string            `json:"cwd"`
			Envs    map[string]string `json:"envs"`
			Timeout int               `json:"timeout"`
		}
		_ = json.Unmarshal(body, &req)
		parts := daytonaSplit(req.Command)
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(req.Timeout)*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, parts[0], parts[1:]...)
		cmd.Dir = req.Cwd
		cmd.WaitDelay = time.Second
		cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + sb.dir}
		for k, v := range req.Envs {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		f.mu.Unlock()
		out, err := cmd.CombinedOutput()
		f.mu.Lock()
		var exit *exec.ExitError
		switch {
		case ctx.Err() != nil:
			writeJSON(w, http.StatusRequestTimeout, map[string]any{"statusCode": 408, "message": "command execution timeout"})
		case errors.As(err, &exit):
			writeJSON(w, http.StatusOK, map[string]any{"exitCode": exit.ExitCode(), "result": string(out)})
		case err != nil:
			writeJSON(w, http.StatusOK, map[string]any{"exitCode": -1, "result": string(out)})
		default:
			writeJSON(w, http.StatusOK, map[string]any{"exitCode": 0, "result": string(out)})
		}
	case route == "/files/download":
		data, err := os.ReadFile(q)
		if err != nil {
			writeJSON(w, http.StatusNotFound, map[string]any{"statusCode": 404, "message": "file not found"})
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(data)
	case route == "/files/upload":
		r.Body = io.NopCloser(bytes.NewReader(body))
		file, _, err := r.FormFile("file")
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"statusCode": 400})
			return
		}
		data, _ := io.ReadAll(file)
		_ = os.MkdirAll(filepath.Dir(q), 0o755)
		_ = os.WriteFile(q, data, 0o644)
		w.WriteHeader(http.StatusOK)
	case route == "/files" && r.Method == http.MethodDelete:
		_ = os.Remove(q)
		w.WriteHeader(http.StatusOK)
	case route == "/files":
		des, err := os.ReadDir(q)
		if err != nil {
			writeJSON(w, http.StatusNotFound, map[string]any{"statusCode": 404})
			return
		}
		infos := []map[string]any{}
		for _, de := range des {
			info, _ := de.Info()
			infos = append(infos, map[string]any{
				"name": de.Name(), "isDir": de.IsDir(), "size": info.Size(), "modTime": info.ModTime().String(),
				"mode": info.Mode().String(), "permissions": "0644", "owner": "daytona", "group": "daytona",
			})
		}
		writeJSON(w, http.StatusOK, infos)
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"statusCode": 404})
	}
}
