package probe_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/provider/probe"
	"github.com/svcdev/svc/internal/provider/probe/vendortest"
)

func TestDockerPingsTheEngineOverItsSocket(t *testing.T) {
	t.Parallel()
	engine := vendortest.StartEngineSocket(t)
	docker := lookup(t, "docker")
	allowed := probe.New(&endpoint.Policy{AllowedSockets: []string{engine.Socket}}, time.Second)

	res := allowed.Probe(t.Context(), probe.Target{Type: docker, Config: map[string]any{"host": "unix://" + engine.Socket}})
	require.Equal(t, probe.Succeeded, res.Outcome, res.Message)
	res = allowed.Probe(t.Context(), probe.Target{Type: docker, Config: map[string]any{"host": "unix://" + engine.Socket, "api_version": "1.47"}})
	require.Equal(t, probe.Succeeded, res.Outcome, res.Message)
	require.Equal(t, []string{"GET /_ping", "GET /v1.47/_ping"}, engine.Requests(), "the test only pings; it creates nothing")

	// A socket the operator has not allowed is never dialled.
	res = probe.New(&endpoint.Policy{}, time.Second).Probe(t.Context(), probe.Target{Type: docker, Config: map[string]any{"host": "unix://" + engine.Socket}})
	require.Equal(t, probe.Failed, res.Outcome)
	require.Equal(t, "the call was refused by the endpoint policy: the socket is not allowed (list it in endpoint_policy.allowed_sockets)", res.Message)
	// Nor is the default socket, unless allowed.
	res = probe.New(&endpoint.Policy{}, time.Second).Probe(t.Context(), probe.Target{Type: docker, Config: map[string]any{}})
	require.Equal(t, probe.Failed, res.Outcome)
	require.Len(t, engine.Requests(), 2)
}

func TestDockerPingOfSomethingElseFails(t *testing.T) {
	t.Parallel()
	srv := vendortest.Start(t, vendortest.Vendors()[0], "k") // an OpenAI stand-in, not an engine
	res := probe.New(openPolicy(t, srv.URL), time.Second).Probe(t.Context(), probe.Target{
		Type: lookup(t, "docker"), Config: map[string]any{"host": "tcp://" + srv.Listener.Addr().String()},
	})
	require.Equal(t, probe.Failed, res.Outcome)
	require.Equal(t, "the endpoint answered HTTP 404 Not Found; check the base URL", res.Message)
}

func TestDockerPingsAProtectedEngineOverTLS(t *testing.T) {
	t.Parallel()
	pki := newPKI(t)
	engine := vendortest.StartEngineTLS(t, &tls.Config{
		Certificates: []tls.Certificate{pki.server},
		ClientCAs:    pki.pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS12,
	})
	docker := lookup(t, "docker")
	p := probe.New(openPolicy(t, engine.URL), 2*time.Second)
	host := "tcp://" + engine.Listener.Addr().String()

	full := map[string]any{"tls_ca": pki.caPEM, "tls_cert": pki.clientPEM, "tls_key": pki.clientKeyPEM}
	res := p.Probe(t.Context(), probe.Target{Type: docker, Config: map[string]any{"host": host}, Credential: full})
	require.Equal(t, probe.Succeeded, res.Outcome, res.Message)
	require.Equal(t, []string{"GET /_ping"}, engine.Requests())

	for name, tc := range map[string]struct {
		cred map[string]any
		want string
	}{
		"no client certificate": {map[string]any{"tls_ca": pki.caPEM}, "the TLS handshake with the endpoint failed; check its certificate"},
		"unknown CA":            {map[string]any{"tls_ca": newPKI(t).caPEM, "tls_cert": pki.clientPEM, "tls_key": pki.clientKeyPEM}, "the TLS handshake with the endpoint failed; check its certificate"},
		"not PEM":               {map[string]any{"tls_ca": "not a certificate"}, "the stored tls_ca holds no PEM certificate"},
		"key of another cert":   {map[string]any{"tls_ca": pki.caPEM, "tls_cert": pki.clientPEM, "tls_key": newPKI(t).clientKeyPEM}, "the stored tls_cert and tls_key are not a matching PEM certificate and key"},
	} {
		res := p.Probe(t.Context(), probe.Target{Type: docker, Config: map[string]any{"host": host}, Credential: tc.cred})
		require.Equal(t, probe.Failed, res.Outcome, name)
		require.Equal(t, tc.want, res.Message, name)
	}
}

// pki is a CA with a server certificate for 127.0.0.1 and a client certificate.
type pki struct {
	pool                           *x509.CertPool
	server                         tls.Certificate
	caPEM, clientPEM, clientKeyPEM string
}

func newPKI(t *testing.T) pki {
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
	issue := func(serial int64, tmpl x509.Certificate) (certPEM, keyPEM string) {
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
	return pki{
		pool: pool, server: server,
		caPEM:     string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})),
		clientPEM: clientCert, clientKeyPEM: clientKey,
	}
}
