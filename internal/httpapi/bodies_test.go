package httpapi_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/client"
	"github.com/svcdev/svc/internal/apitest"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/metrics"
	"github.com/svcdev/svc/internal/metrics/metricstest"
	"github.com/svcdev/svc/internal/testfactory"
)

// answerWait bounds how long a test waits for an answer the server must give
// without the body: far below any body deadline the test configures, so a
// server that waits for the body fails the test rather than answering late.
const answerWait = 5 * time.Second

type bodiesBundle struct {
	h      *apitest.Harness
	admin  testfactory.Admin
	viewer testfactory.Member
}

func setupBodies(t *testing.T, configure func(*config.Config)) *bodiesBundle {
	t.Helper()
	h := apitest.Start(t, apitest.Options{Configure: configure})
	admin := testfactory.Bootstrap(t, h.App.Pool)
	viewer := testfactory.AddMember(t, h.App.Pool, admin.OrganizationID, admin.WorkspaceID, testfactory.MemberOpts{WorkspaceRole: "viewer"})
	return &bodiesBundle{h: h, admin: admin, viewer: viewer}
}

// rawConn is a client connection that sends exactly what the test writes.
type rawConn struct {
	net.Conn
	r *bufio.Reader
}

// open sends a request's head (request line and headers, which must end
// with "\r\n") and body, if any, and leaves the connection open.
func (b *bodiesBundle) open(t *testing.T, head, body string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", b.h.App.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = io.WriteString(c, head+"Host: svc.test\r\n\r\n"+body)
	require.NoError(t, err)
	return &rawConn{Conn: c, r: bufio.NewReader(c)}
}

// answer reads the response, waiting at most wait.
func (c *rawConn) answer(t *testing.T, wait time.Duration) (*http.Response, client.Error) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(wait)))
	resp, err := http.ReadResponse(c.r, nil)
	require.NoError(t, err, "no answer within %s", wait)
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out client.Error
	if resp.StatusCode >= 400 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		require.NoError(t, json.Unmarshal(raw, &out), string(raw))
		require.Equal(t, resp.Header.Get("X-Request-Id"), out.Error.RequestId, "error bodies carry the request id")
	}
	return resp, out
}

func jsonHead(method, path string, length int, header ...string) string {
	var h strings.Builder
	fmt.Fprintf(&h, "%s %s HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", method, path, length)
	for i := 0; i+1 < len(header); i += 2 {
		fmt.Fprintf(&h, "%s: %s\r\n", header[i], header[i+1])
	}
	return h.String()
}

// TestRefusedRequestsAreAnsweredWithoutTheirBody reproduces slow-body
// exhaustion: a request without valid credentials announced a body that
// never comes, and the edge read bodies before authenticating. It is now
// answered from its headers at once (401, or 403 for a key without the
// permission), the body unread, and the connection closed.
func TestRefusedRequestsAreAnsweredWithoutTheirBody(t *testing.T) {
	t.Parallel()
	b := setupBodies(t, nil)

	cases := []struct {
		name   string
		header []string
		status int
		code   client.ErrorCode
	}{
		{"no key", nil, 401, client.ErrorCodeUnauthenticated},
		{"unknown key", []string{"Authorization", "Bearer svc_" + strings.Repeat("x", 44)}, 401, client.ErrorCodeUnauthenticated},
		{"key without the permission", []string{"Authorization", "Bearer " + b.viewer.Token}, 403, client.ErrorCodePermissionDenied},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// 100 KiB announced (under the 256 KiB Go's server would read before
			// answering), a few bytes sent, the rest never.
			c := b.open(t, jsonHead("POST", "/api/v1/agents", 100<<10, tc.header...), `{"name":`)
			resp, e := c.answer(t, answerWait)
			require.Equal(t, tc.status, resp.StatusCode)
			require.Equal(t, tc.code, e.Error.Code)
			require.True(t, resp.Close, "a refusal that leaves the body unread closes the connection")
		})
	}
	require.Zero(t, gauge(t, b.h.App.Metrics, "svc_http_unauthenticated_bodies"), "refused bodies were never read")
}

// TestSlowAuthenticatedBodiesAreCutAtTheirDeadline: a body sent with a valid
// key more slowly than server.body_min_bytes_per_second, beyond
// server.body_read_timeout, is answered 408 request_timeout (a JSON body and
// an asset upload alike) and nothing is stored; before, it held its
// connection and its buffer for as long as the client liked.
func TestSlowAuthenticatedBodiesAreCutAtTheirDeadline(t *testing.T) {
	t.Parallel()
	b := setupBodies(t, func(c *config.Config) {
		c.Server.BodyReadTimeout = 300 * time.Millisecond
		c.Server.BodyMinBytesPerSecond = 1000
	})
	auth := []string{"Authorization", "Bearer " + b.admin.APIKey}

	for _, target := range []struct{ name, head string }{
		{"json", jsonHead("POST", "/api/v1/agents", 4000, auth...)},
		{"upload", "POST /api/v1/assets?name=slow.bin HTTP/1.1\r\nContent-Type: application/octet-stream\r\nContent-Length: 4000\r\n" +
			"Authorization: Bearer " + b.admin.APIKey + "\r\n"},
	} {
		t.Run(target.name, func(t *testing.T) {
			t.Parallel()
			c := b.open(t, target.head, "")
			// 20 bytes a second: a twentieth of the minimum rate.
			go func() {
				for range 200 {
					if _, err := c.Write([]byte("x")); err != nil {
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
			}()
			resp, e := c.answer(t, answerWait)
			require.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
			require.Equal(t, client.ErrorCodeRequestTimeout, e.Error.Code)
			require.Contains(t, e.Error.Message, "server.body_min_bytes_per_second")
			require.True(t, resp.Close)
		})
	}
	list := b.h.Do(t, http.MethodGet, "/api/v1/assets", nil, auth...)
	var page client.AssetPage
	require.NoError(t, json.NewDecoder(list.Body).Decode(&page))
	require.Empty(t, page.Items, "a cut upload stores nothing")
}

// pacedReader yields data in chunks of chunk bytes, one every interval.
type pacedReader struct {
	data     []byte
	chunk    int
	interval time.Duration
}

func (r *pacedReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	time.Sleep(r.interval)
	n := copy(p[:min(len(p), r.chunk)], r.data)
	r.data = r.data[n:]
	return n, nil
}

// TestUploadsAtASaneRateOutlastTheGrace: the deadline moves forward as bytes
// arrive, so an upload sent steadily above the minimum rate succeeds however
// long it takes overall (here about eight times server.body_read_timeout).
func TestUploadsAtASaneRateOutlastTheGrace(t *testing.T) {
	t.Parallel()
	b := setupBodies(t, func(c *config.Config) {
		c.Server.BodyReadTimeout = 300 * time.Millisecond
		c.Server.BodyMinBytesPerSecond = 16 << 10
	})
	data := bytes.Repeat([]byte("0123456789abcdef"), 6<<10) // 96 KiB at about 40 KiB/s
	req, err := http.NewRequest(http.MethodPost, b.h.URL+"/api/v1/assets?name=steady.bin",
		&pacedReader{data: data, chunk: 4 << 10, interval: 100 * time.Millisecond})
	require.NoError(t, err)
	req.ContentLength = int64(len(data))
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Authorization", "Bearer "+b.admin.APIKey)
	began := time.Now()
	resp, err := b.h.HTTP.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(raw))
	require.Greater(t, time.Since(began), 3*b.h.Config.Server.BodyReadTimeout, "the upload outlasted the grace")
	var a client.Asset
	require.NoError(t, json.Unmarshal(raw, &a))
	sum := sha256.Sum256(data)
	require.Equal(t, hex.EncodeToString(sum[:]), a.Sha256)
	require.Equal(t, int64(len(data)), a.Size)
}

// TestBodiesWithoutCredentialsAreBounded reproduces the memory exhaustion:
// many connections sending bodies slowly to operations that need no key
// (invitation acceptance, console sign-in). At most
// limits.unauthenticated_bodies are read at once; the rest are refused at
// once, 503 with Retry-After, without a byte of their body read or
// buffered, while requests with a key are unaffected. A held body is cut at
// server.unauthenticated_body_timeout, and one larger than
// limits.unauthenticated_body_bytes is 413 before it is read.
func TestBodiesWithoutCredentialsAreBounded(t *testing.T) {
	t.Parallel()
	const slots = 4
	b := setupBodies(t, func(c *config.Config) {
		c.Limits.UnauthenticatedBodies = slots
		c.Server.UnauthenticatedBodyTimeout = 3 * time.Second
	})
	m := b.h.App.Metrics
	accept := func(length int) string { return jsonHead("POST", "/api/v1/invitations/accept", length) }

	held := make([]*rawConn, slots)
	for i := range held {
		held[i] = b.open(t, accept(1000), `{"token":"`)
	}
	require.Eventually(t, func() bool { return gauge(t, m, "svc_http_unauthenticated_bodies") == slots }, answerWait, 10*time.Millisecond)

	for i := range 20 {
		c := b.open(t, accept(16000), "")
		resp, e := c.answer(t, answerWait)
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "request %d", i)
		require.Equal(t, client.ErrorCodeUnavailable, e.Error.Code)
		require.Equal(t, "1", resp.Header.Get("Retry-After"))
		require.True(t, resp.Close)
	}
	form := b.open(t, "POST /sign-in HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 500\r\n", "")
	resp, _ := form.answer(t, answerWait)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "console forms share the cap")
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
	require.Equal(t, float64(21), gauge(t, m, "svc_http_unauthenticated_bodies_refused_total"))

	// A request with a key takes no slot: its body is read and validated.
	withKey := b.open(t, jsonHead("POST", "/api/v1/agents", 2, "Authorization", "Bearer "+b.admin.APIKey), "{}")
	resp, e := withKey.answer(t, answerWait)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Equal(t, client.ErrorCodeInvalidArgument, e.Error.Code)

	// The held bodies end at their deadline, freeing their slots.
	for _, c := range held {
		resp, e := c.answer(t, answerWait)
		require.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
		require.Contains(t, e.Error.Message, "server.unauthenticated_body_timeout")
	}
	require.Eventually(t, func() bool { return gauge(t, m, "svc_http_unauthenticated_bodies") == 0 }, answerWait, 10*time.Millisecond)

	tooLarge := b.open(t, accept(int(b.h.Config.Limits.UnauthenticatedBodyBytes)+1), "")
	resp, e = tooLarge.answer(t, answerWait)
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	require.Contains(t, e.Error.Message, "limits.unauthenticated_body_bytes")
	require.Zero(t, gauge(t, m, "svc_http_unauthenticated_bodies"))
}

// gauge is the value of the process's metric name (a gauge or a counter
// without labels).
func gauge(t *testing.T, m *metrics.Metrics, name string) float64 {
	t.Helper()
	samples := metricstest.Samples(t, m.Registry)
	require.Contains(t, samples, name)
	return samples[name]
}

// TestOneClientCannotHoldEveryUnauthenticatedSlot: one client address
// holds at most limits.unauthenticated_bodies_per_client of the slots for
// bodies without credentials; its next body is refused at once, while
// another client's body is still read.
func TestOneClientCannotHoldEveryUnauthenticatedSlot(t *testing.T) {
	t.Parallel()
	b := setupBodies(t, func(c *config.Config) {
		c.Limits.UnauthenticatedBodies = 4
		c.Limits.UnauthenticatedBodiesPerClient = 2
		c.Server.UnauthenticatedBodyTimeout = 3 * time.Second
		c.Server.TrustedProxies = []string{"127.0.0.0/8"}
	})
	m := b.h.App.Metrics
	from := func(addr string, length int) string {
		return jsonHead("POST", "/api/v1/invitations/accept", length, "X-Forwarded-For", addr)
	}
	held := []*rawConn{b.open(t, from("203.0.113.7", 1000), `{"token":"`), b.open(t, from("203.0.113.7", 1000), `{"token":"`)}
	require.Eventually(t, func() bool { return gauge(t, m, "svc_http_unauthenticated_bodies") == 2 }, answerWait, 10*time.Millisecond)

	third := b.open(t, from("203.0.113.7", 16), "")
	resp, e := third.answer(t, answerWait)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, client.ErrorCodeUnavailable, e.Error.Code)
	require.Equal(t, "1", resp.Header.Get("Retry-After"))

	body := `{"token":"nope"}`
	other := b.open(t, from("198.51.100.9", len(body)), body)
	resp, e = other.answer(t, answerWait)
	require.NotEqual(t, http.StatusServiceUnavailable, resp.StatusCode, "another client's body is read: %+v", e)

	for _, c := range held {
		resp, _ := c.answer(t, answerWait)
		require.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
	}
	require.Eventually(t, func() bool { return gauge(t, m, "svc_http_unauthenticated_bodies") == 0 }, answerWait, 10*time.Millisecond)
}
