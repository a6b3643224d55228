package hosted

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/endpoint"
)

// loopbackResolver answers every host name with 127.0.0.1 and records them.
type loopbackResolver struct {
	mu    sync.Mutex
	names []string
}

func (r *loopbackResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.names = append(r.names, host)
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// policyFor is a policy that opens the loopback port of serverURL, as an
// operator would for a vendor on its own network.
func policyFor(t *testing.T, serverURL string, resolver endpoint.Resolver) *endpoint.Policy {
	t.Helper()
	u, err := url.Parse(serverURL)
	require.NoError(t, err)
	port, err := strconv.Atoi(u.Port())
	require.NoError(t, err)
	return &endpoint.Policy{
		AllowHTTP:       true,
		AllowedPrefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		AllowedPorts:    []uint16{uint16(port)},
		Resolver:        resolver,
	}
}

// plainServer starts an http test server and returns it with a guarded client
// allowed to reach it.
func plainServer(t *testing.T, h http.Handler) (*httptest.Server, *http.Client) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, policyFor(t, srv.URL, nil).HTTPClient(0)
}

// tlsServer starts an https test server whose certificate covers domain and
// every name below it, and a guarded client that resolves those names to the
// server and trusts its certificate.
func tlsServer(t *testing.T, h http.Handler, domain string) (*httptest.Server, *http.Client) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: domain},
		DNSNames:  []string{domain, "*." + domain},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	client := policyFor(t, srv.URL, &loopbackResolver{}).HTTPClient(0, endpoint.WithTLSConfig(&tls.Config{RootCAs: pool}))
	return srv, client
}

// writeJSON answers with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// recorded is one request a fake vendor received.
type recorded struct {
	Method, Path, Query string
	Header              http.Header
	Body                []byte
}

// recorder keeps the requests a fake vendor received.
type recorder struct {
	mu   sync.Mutex
	reqs []recorded
}

func (r *recorder) add(req *http.Request, body []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, recorded{Method: req.Method, Path: req.URL.Path, Query: req.URL.RawQuery, Header: req.Header.Clone(), Body: body})
}

// find returns the requests with the method and path.
func (r *recorder) find(method, path string) []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []recorded
	for _, q := range r.reqs {
		if q.Method == method && q.Path == path {
			out = append(out, q)
		}
	}
	return out
}

// all returns every request received.
func (r *recorder) all() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.reqs...)
}

// box is a fake sandbox's file system: a temporary directory standing for
// the sandbox's root, so sandbox path /home/user/x is <root>/home/user/x.
type box struct {
	root string
}

func newBox(t *testing.T, dirs ...string) *box {
	t.Helper()
	b := &box{root: t.TempDir()}
	for _, d := range dirs {
		require.NoError(t, os.MkdirAll(b.host(d), 0o755))
	}
	return b
}

// host maps a sandbox path to the host.
func (b *box) host(p string) string { return filepath.Join(b.root, filepath.FromSlash(p)) }

// exitCode is a finished command's exit code, -1 when a signal ended it.
func exitCode(cmd *exec.Cmd) (int, bool) {
	if cmd.ProcessState == nil {
		return -1, false
	}
	if ws := cmd.ProcessState.ExitCode(); ws >= 0 {
		return ws, true
	}
	return -1, false
}

// readHostFile reads a file of a fake sandbox from the host.
func readHostFile(p string) ([]byte, error) { return os.ReadFile(p) }
