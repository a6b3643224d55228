package docker

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/id"
	"github.com/svcdev/svc/internal/sandbox"
)

// testPKI is a CA with an engine server certificate for 127.0.0.1 and a
// client certificate, in the PEM form the credential stores.
type testPKI struct {
	pool                   *x509.CertPool
	server                 tls.Certificate
	caPEM, certPEM, keyPEM string
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test engine CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err = x509.ParseCertificate(caDER)
	require.NoError(t, err)
	issue := func(serial int64, tmpl x509.Certificate) (string, string) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		tmpl.SerialNumber = big.NewInt(serial)
		tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
		der, err := x509.CreateCertificate(rand.Reader, &tmpl, ca, &key.PublicKey, caKey)
		require.NoError(t, err)
		keyDER, err := x509.MarshalECPrivateKey(key)
		require.NoError(t, err)
		return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
			string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	}
	serverCert, serverKey := issue(2, x509.Certificate{
		Subject: pkix.Name{CommonName: "engine"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	server, err := tls.X509KeyPair([]byte(serverCert), []byte(serverKey))
	require.NoError(t, err)
	clientCert, clientKey := issue(3, x509.Certificate{
		Subject: pkix.Name{CommonName: "svc"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return testPKI{pool: pool, server: server, certPEM: clientCert, keyPEM: clientKey,
		caPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}))}
}

func TestAProtectedEngineOverTLS(t *testing.T) {
	t.Parallel()
	pki := newTestPKI(t)
	eng := newFakeEngine(t)
	// The engine serves HTTP/1.1 only (it hijacks connections for exec).
	eng.Server = httptest.NewUnstartedServer(http.HandlerFunc(eng.serve))
	eng.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake below
	eng.TLS = &tls.Config{Certificates: []tls.Certificate{pki.server}, ClientCAs: pki.pool, ClientAuth: tls.RequireAndVerifyClientCert}
	eng.StartTLS()
	t.Cleanup(eng.shutdown)
	_, portText, err := net.SplitHostPort(eng.Listener.Addr().String())
	require.NoError(t, err)
	port, err := strconv.Atoi(portText)
	require.NoError(t, err)
	policy := &endpoint.Policy{AllowedPrefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, AllowedPorts: []uint16{uint16(port)}}
	cred, err := json.Marshal(map[string]string{"tls_ca": pki.caPEM, "tls_cert": pki.certPEM, "tls_key": pki.keyPEM})
	require.NoError(t, err)
	spec := sandbox.Spec{
		EnvironmentID: id.New(id.Environment), WorkspaceID: id.New(id.Workspace),
		Provider:   json.RawMessage(`{"host":"tcp://` + eng.Listener.Addr().String() + `"}`),
		Credential: cred,
		Template:   json.RawMessage(`{"image":"alpine:3.21","user":"1000"}`),
	}
	d := New(policy, Options{})
	ctx := t.Context()
	h, err := d.Create(ctx, spec)
	require.NoError(t, err)
	inst, err := d.Open(ctx, spec, h)
	require.NoError(t, err)
	defer inst.Close()
	res, err := inst.Run(ctx, sandbox.Command{Argv: []string{"sh", "-c", "echo over tls; exit 4"}})
	require.NoError(t, err)
	require.Equal(t, "over tls\n", string(res.Stdout))
	require.Equal(t, 4, res.ExitCode)
	// Standard input over TLS: the half-close is TLS's close_notify.
	input := "stdin over tls\n" + strings.Repeat("s", 300_000)
	res, err = inst.Run(ctx, sandbox.Command{Argv: []string{"cat"}, Stdin: []byte(input)})
	require.NoError(t, err)
	require.Equal(t, input, string(res.Stdout))
	require.Zero(t, res.ExitCode)
	require.NoError(t, inst.WriteFile(ctx, "f", []byte("tls")))
	f, err := inst.ReadFile(ctx, "f", 0)
	require.NoError(t, err)
	require.Equal(t, "tls", string(f.Data))
	require.NoError(t, d.Destroy(ctx, spec, h))

	// Without the client certificate the engine refuses the handshake.
	spec.Credential = json.RawMessage(`{"tls_ca":` + strconv.Quote(pki.caPEM) + `}`)
	_, err = d.Create(ctx, spec)
	require.Error(t, err)
	require.NotContains(t, err.Error(), "127.0.0.1", "transport errors are fixed text")
	// Plain http to a tcp engine needs the policy's allowance.
	spec.Credential = nil
	_, err = d.Create(ctx, spec)
	require.ErrorIs(t, err, endpoint.ErrRefused)
}

func TestStdinNeedsHTTP1(t *testing.T) {
	t.Parallel()
	pki := newTestPKI(t)
	eng := newFakeEngine(t)
	// A TLS endpoint that negotiates HTTP/2 (not dockerd, which answers HTTP/1.1
	// on its TLS listener): the upgrade cannot be asked for on it.
	eng.Server = httptest.NewUnstartedServer(http.HandlerFunc(eng.serve))
	eng.EnableHTTP2 = true
	eng.TLS = &tls.Config{Certificates: []tls.Certificate{pki.server}, ClientCAs: pki.pool, ClientAuth: tls.RequireAndVerifyClientCert}
	eng.StartTLS()
	t.Cleanup(eng.shutdown)
	_, portText, err := net.SplitHostPort(eng.Listener.Addr().String())
	require.NoError(t, err)
	port, err := strconv.Atoi(portText)
	require.NoError(t, err)
	policy := &endpoint.Policy{AllowedPrefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, AllowedPorts: []uint16{uint16(port)}}
	cred, err := json.Marshal(map[string]string{"tls_ca": pki.caPEM, "tls_cert": pki.certPEM, "tls_key": pki.keyPEM})
	require.NoError(t, err)
	spec := sandbox.Spec{
		EnvironmentID: id.New(id.Environment), WorkspaceID: id.New(id.Workspace),
		Provider:   json.RawMessage(`{"host":"tcp://` + eng.Listener.Addr().String() + `"}`),
		Credential: cred,
		Template:   json.RawMessage(`{"image":"alpine:3.21","user":"1000"}`),
	}
	d := New(policy, Options{})
	ctx := t.Context()
	h, err := d.Create(ctx, spec)
	require.NoError(t, err)
	inst, err := d.Open(ctx, spec, h)
	require.NoError(t, err)
	defer inst.Close()
	_, err = inst.Run(ctx, sandbox.Command{Argv: []string{"cat"}, Stdin: []byte("x")})
	var de *Error
	require.ErrorAs(t, err, &de)
	require.Contains(t, de.Message, "HTTP/1.1")
}
