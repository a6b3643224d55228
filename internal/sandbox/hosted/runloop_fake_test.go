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

// fakeRunloop speaks Runloop's devbox API for devboxes backed by temporary
// directories (the devbox user's HOME); execute_sync runs the command line
// with sh on the host.
type fakeRunloop struct {
	t   *testing.T
	key string
	rec recorder

	mu      sync.Mutex
	next    int
	devices map[string]*runloopBox
}

type runloopBox struct {
	home   string
	status string
}

func newFakeRunloop(t *testing.T) *fakeRunloop {
	return &fakeRunloop{t: t, key: "ak_runloop_test_789", devices: map[string]*runloopBox{}}
}

func (f *fakeRunloop) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.rec.add(r, body)
	if r.Header.Get("Authorization") != "Bearer "+f.key {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "bad key " + r.Header.Get("Authorization")})
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/v1/devboxes"), "/")
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Method == http.MethodPost && r.URL.Path == "/v1/devboxes" {
		f.next++
		id := fmt.Sprintf("dbx_%d", f.next)
		f.devices[id] = &runloopBox{home: f.t.TempDir(), status: "provisioning"}
		f.view(w, id)
		return
	}
	if len(parts) < 2 || parts[0] != "" {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "no route"})
		return
	}
	db := f.devices[parts[1]]
	if db == nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "devbox " + parts[1] + " not found"})
		return
	}
	action := ""
	if len(parts) == 3 {
		action = parts[2]
	}
	refuse := func() { writeJSON(w, http.StatusBadRequest, map[string]any{"message": "devbox is " + db.status}) }
	switch {
	case r.Method == http.MethodGet && action == "":
		switch db.status {
		case "provisioning", "initializing", "resuming":
			db.status = "running"
		}
		f.view(w, parts[1])
	case action == "suspend":
		if db.status != "running" {
			refuse()
			return
		}
		db.status = "suspended"
		f.view(w, parts[1])
	case action == "resume":
		if db.status != "suspended" {
			refuse()
			return
		}
		db.status = "resuming"
		f.view(w, parts[1])
	case action == "shutdown":
		if db.status == "shutdown" {
			refuse()
			return
		}
		db.status = "shutdown"
		f.view(w, parts[1])
	case action == "keep_alive":
		if db.status != "running" {
			refuse()
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{})
	case db.status != "running":
		refuse()
	case action == "execute_sync":
		var req struct {
			Command string `json:"command"`
		}
		_ = json.Unmarshal(body, &req)
		cmd := exec.CommandContext(context.Background(), "sh", "-c", req.Command)
		cmd.Dir = db.home
		cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + db.home}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.WaitDelay = time.Second
		f.mu.Unlock()
		err := cmd.Run()
		f.mu.Lock()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		}
		writeJSON(w, http.StatusOK, map[string]any{"devbox_id": parts[1], "stdout": stdout.String(), "stderr": stderr.String(), "exit_status": code, "shell_name": nil})
	case action == "download_file":
		var req struct {
			Path string `json:"path"`
		}
		_ = json.Unmarshal(body, &req)
		data, err := os.ReadFile(req.Path)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"message": "failed to read file"})
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(data)
	case action == "upload_file":
		r.Body = io.NopCloser(bytes.NewReader(body))
		file, _, err := r.FormFile("file")
		p := r.FormValue("path")
		if err != nil || p == "" {
			writeJSON(w, http.StatusBadRequest, map[string]any{"message": "bad upload"})
			return
		}
		data, _ := io.ReadAll(file)
		if err := os.WriteFile(filepath.Clean(p), data, 0o644); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"message": "write failed"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{})
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "no route"})
	}
}

func (f *fakeRunloop) view(w http.ResponseWriter, id string) {
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "status": f.devices[id].status, "create_time_ms": 1, "capabilities": []string{}, "metadata": map[string]string{}})
}
