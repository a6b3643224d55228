package probe

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"strings"
)

// enginePing sends GET /_ping (under /v{api_version} when the config pins a
// version) to a container engine. The ping creates nothing. The engine answers "OK" with an Api-Version header.
func (p *Prober) enginePing(ctx context.Context, t Target) Result {
	vars := templateVars(t, nil)
	tlsConfig, err := engineTLS(t.Credential)
	if err != nil {
		return failed(err.Error())
	}
	client, base, err := p.policy.EngineClient(vars["host"], tlsConfig, p.timeout)
	if err != nil {
		return callFailed(err, p.timeout)
	}
	defer client.CloseIdleConnections()
	path := "/_ping"
	if v := vars["api_version"]; v != "" {
		path = "/v" + v + path
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return failed("the configured engine address is not valid")
	}
	resp, err := client.Do(req)
	if err != nil {
		return callFailed(err, p.timeout)
	}
	defer func() { _ = resp.Body.Close() }()
	if res, done := statusFailure(t.Type, resp.StatusCode, tlsConfig != nil); done {
		return res
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64))
	if err != nil {
		return callFailed(err, p.timeout)
	}
	if strings.TrimSpace(string(body)) != "OK" || resp.Header.Get("Api-Version") == "" {
		return failed("the endpoint answered, but not as a container engine does; check the address")
	}
	return Result{Outcome: Succeeded}
}

// engineTLS builds the TLS configuration of the docker credential: a CA that
// signed the engine's certificate and a client certificate and key. It is nil
// when the credential holds none of them (the engine is reached without TLS).
func engineTLS(cred map[string]any) (*tls.Config, error) {
	if !EngineUsesTLS(cred) {
		return nil, nil
	}
	ca, _ := cred["tls_ca"].(string)
	cert, _ := cred["tls_cert"].(string)
	key, _ := cred["tls_key"].(string)
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(ca)) {
			return nil, errors.New("the stored tls_ca holds no PEM certificate")
		}
		cfg.RootCAs = pool
	}
	if cert != "" || key != "" {
		pair, err := tls.X509KeyPair([]byte(cert), []byte(key))
		if err != nil {
			return nil, errors.New("the stored tls_cert and tls_key are not a matching PEM certificate and key")
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// EngineUsesTLS reports whether a docker credential makes the engine be
// reached over TLS: it holds a CA, a client certificate or a key.
func EngineUsesTLS(cred map[string]any) bool {
	for _, k := range []string{"tls_ca", "tls_cert", "tls_key"} {
		if v, _ := cred[k].(string); v != "" {
			return true
		}
	}
	return false
}
