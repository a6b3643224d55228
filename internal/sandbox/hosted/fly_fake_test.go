package hosted

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeFly speaks the Machines API for one app, for machines backed by
// temporary directories (the machine user's HOME); exec runs argv on the
// host with that HOME.
type fakeFly struct {
	t     *testing.T
	token string
	app   string
	rec   recorder

	mu       sync.Mutex
	next     int
	machines map[string]*flyBox
}

type flyBox struct {
	home  string
	state string
}

func newFakeFly(t *testing.T) *fakeFly {
	return &fakeFly{t: t, token: "FlyV1 fm2_test_token", app: "svc-sandboxes", machines: map[string]*flyBox{}}
}

func (f *fakeFly) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.rec.add(r, body)
	if r.Header.Get("Authorization") != f.token {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "Authenticate: token validation error " + r.Header.Get("Authorization")})
		return
	}
	prefix := "/v1/apps/" + f.app + "/machines"
	rest, ok := strings.CutPrefix(r.URL.Path, prefix)
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "app not found"})
		return
	}
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Method == http.MethodPost && rest == "" {
		f.next++
		id := fmt.Sprintf("e784%d", f.next)
		f.machines[id] = &flyBox{home: f.t.TempDir(), state: "created"}
		f.view(w, id)
		return
	}
	m := f.machines[parts[0]]
	if m == nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "machine not found"})
		return
	}
	action := ""
	if len(parts) == 2 {
		action = parts[1]
	}
	switch {
	case r.Method == http.MethodGet && action == "":
		if m.state == "created" || m.state == "starting" {
			m.state = "started"
		}
		f.view(w, parts[0])
	case r.Method == http.MethodDelete && action == "":
		if r.URL.Query().Get("force") != "true" && m.state == "started" {
			writeJSON(w, http.StatusPreconditionFailed, map[string]any{"error": "machine is running"})
			return
		}
		delete(f.machines, parts[0])
		writeJSON(w, http.StatusOK, map[string]any{"ok": true})
	case action == "stop":
		if m.state != "started" {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "machine not in a stoppable state"})
			return
		}
		m.state = "stopped"
		writeJSON(w, http.StatusOK, map[string]any{"ok": true})
	case action == "start":
		m.state = "starting"
		writeJSON(w, http.StatusOK, map[string]any{"previous_state": "stopped"})
	case action == "exec" && m.state == "started":
		var req struct {
			Command []string `json:"command"`
			Timeout int      `json:"timeout"`
		}
		_ = json.Unmarshal(body, &req)
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(req.Timeout)*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, req.Command[0], req.Command[1:]...)
		cmd.Dir = m.home
		cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + m.home}
		cmd.WaitDelay = time.Second
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		f.mu.Unlock()
		err := cmd.Run()
		f.mu.Lock()
		res := map[string]any{"stdout": stdout.String(), "stderr": stderr.String(), "exit_code": 0}
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			res["exit_code"] = exit.ExitCode()
			if exit.ExitCode() < 0 {
				res["exit_signal"] = 9
			}
		}
		writeJSON(w, http.StatusOK, res)
	default:
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "machine is " + m.state})
	}
}

func (f *fakeFly) view(w http.ResponseWriter, id string) {
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "name": "m", "state": f.machines[id].state, "region": "ams", "instance_id": "01H"})
}
