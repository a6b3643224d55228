package vendortest

import (
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Engine is a stand-in for a Docker Engine API: it answers GET /_ping (and
// /v{version}/_ping) as the engine does, "OK" with its Api-Version and Ostype
// headers, and records every request, so a test can show that a ping created
// nothing.
type Engine struct {
	*httptest.Server
	// Socket is the Unix socket path when the engine listens on one.
	Socket string

	mu       sync.Mutex
	requests []string
}

// StartEngineSocket serves an engine on a Unix socket in a temporary directory.
func StartEngineSocket(t testing.TB) *Engine {
	t.Helper()
	// Socket paths are limited to about 100 bytes; t.TempDir() can be longer.
	dir, err := os.MkdirTemp("", "eng")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	e := &Engine{Socket: filepath.Join(dir, "docker.sock")}
	ln, err := net.Listen("unix", e.Socket)
	if err != nil {
		t.Fatal(err)
	}
	e.Server = httptest.NewUnstartedServer(http.HandlerFunc(e.serve))
	_ = e.Listener.Close()
	e.Listener = ln
	e.Start()
	t.Cleanup(e.Close)
	return e
}

// StartEngineTLS serves an engine over TCP with tlsConfig (which should
// require a client certificate, as a protected engine does).
func StartEngineTLS(t testing.TB, tlsConfig *tls.Config) *Engine {
	t.Helper()
	e := &Engine{}
	e.Server = httptest.NewUnstartedServer(http.HandlerFunc(e.serve))
	e.TLS = tlsConfig
	e.StartTLS()
	t.Cleanup(e.Close)
	return e
}

// Requests lists "METHOD path" of every request served.
func (e *Engine) Requests() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.requests...)
}

func (e *Engine) serve(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	e.requests = append(e.requests, r.Method+" "+r.URL.Path)
	e.mu.Unlock()
	h := w.Header()
	h.Set("Api-Version", "1.47")
	h.Set("Docker-Experimental", "false")
	h.Set("Ostype", "linux")
	h.Set("Server", "Docker/27.5.1 (linux)")
	ping := r.URL.Path == "/_ping" || r.URL.Path == "/v1.47/_ping"
	if !ping || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		h.Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"message":"page not found"}`))
		return
	}
	h.Set("Cache-Control", "no-cache, no-store, must-revalidate")
	h.Set("Pragma", "no-cache")
	h.Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("OK"))
}
