package httpapi_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/client"
	"github.com/svcdev/svc/internal/config"
)

// TestAssetsUploadLimit: more than limits.asset_bytes is 413 whether the
// length is announced or not, and nothing is stored, not even half; the JSON
// rules of the edge (limits.request_bytes, 415) do not apply to uploads.
func TestAssetsUploadLimit(t *testing.T) {
	t.Parallel()
	b := setupAssets(t, func(c *config.Config) {
		c.Limits.AssetBytes = 64 << 10
		c.Limits.RequestBytes = 1 << 10
	})
	over := bytes.Repeat([]byte("x"), 64<<10+1)
	for _, size := range []int64{int64(len(over)), -1} {
		u := b.upload(t, b.admin.APIKey, "too big", "application/octet-stream", bytes.NewReader(over), size)
		require.Equal(t, http.StatusRequestEntityTooLarge, u.status, "size %d", size)
		require.Equal(t, client.ErrorCodePayloadTooLarge, u.err.Error.Code)
		require.Contains(t, u.err.Error.Message, "65536 bytes")
		b.requireNothingStored(t)
	}
	// Far more than the limit, chunked: refused as soon as the limit is
	// passed, without reading the rest.
	u := b.upload(t, b.admin.APIKey, "endless", "", io.LimitReader(zeros{}, 1<<30), -1)
	require.Equal(t, http.StatusRequestEntityTooLarge, u.status)
	b.requireNothingStored(t)

	// Exactly the limit is fine, and far above limits.request_bytes.
	exact := bytes.Repeat([]byte("y"), 64<<10)
	a := b.mustUpload(t, "exact", "image/png", exact)
	require.Equal(t, int64(len(exact)), a.Size)
}

// TestAssetsUploadCutOff: a client that goes away mid-upload leaves nothing:
// no asset, no upload record, no object, no temporary file.
func TestAssetsUploadCutOff(t *testing.T) {
	t.Parallel()
	b := setupAssets(t)
	addr := strings.TrimPrefix(b.h.URL, "http://")
	for i, framing := range []string{"length", "chunked"} {
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		head := "POST /api/v1/assets?name=cut HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: Bearer " + b.admin.APIKey +
			"\r\nContent-Type: application/octet-stream\r\n"
		if framing == "length" {
			head += "Content-Length: 1000000\r\n\r\n"
		} else {
			head += "Transfer-Encoding: chunked\r\n\r\n"
		}
		_, err = io.WriteString(conn, head)
		require.NoError(t, err)
		part := bytes.Repeat([]byte("z"), 300000)
		if framing == "chunked" {
			part = append(append([]byte(fmt.Sprintf("%x\r\n", len(part))), part...), "\r\n"...)
		}
		_, err = conn.Write(part)
		require.NoError(t, err)
		// Wait until the server is reading the body (the upload record exists),
		// then go away.
		eventually(t, 5*time.Second, "the upload started", func() bool {
			var n int
			require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT count(*) FROM asset_upload`).Scan(&n))
			return n == 1
		})
		require.NoError(t, conn.Close())
		eventually(t, 5*time.Second, "the cut-off upload was logged", func() bool {
			return strings.Count(b.h.Logs.String(), `"route":"/api/v1/assets","status":400`) == i+1
		})
		b.requireNothingStored(t)
	}
	// The service is fine afterwards.
	b.mustUpload(t, "whole", "text/plain", []byte("complete"))
}

// TestAssetsNames: names are 1 to 200 characters of any script, stored and
// answered exactly; control characters and invalid UTF-8 are refused; names
// that look like paths are only names.
func TestAssetsNames(t *testing.T) {
	t.Parallel()
	b := setupAssets(t)
	accepted := []string{
		"résumé.pdf", "日本語のファイル名.txt", "مستند.docx", "🦊 fox.png", "e\u0301", "Ω≈ç√∫", strings.Repeat("名", 200),
		"../../etc/passwd", `..\..\windows\system32`, "/etc/shadow", "%2e%2e%2fsecret", "a/b/c", ".", "..", "ws/other/assets/x",
		`quote " and \ backslash`, "semi;colon=value",
	}
	for _, name := range accepted {
		u := b.upload(t, b.admin.APIKey, name, "text/plain", strings.NewReader(name), int64(len(name)))
		require.Equal(t, http.StatusCreated, u.status, "name %q: %v", name, u.err)
		require.Equal(t, name, u.asset.Name)
		resp, raw := b.content(t, b.admin.APIKey, u.asset.Id)
		require.Equal(t, name, string(raw))
		require.True(t, strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment; filename"), resp.Header.Get("Content-Disposition"))
		require.Len(t, resp.Header.Values("Content-Disposition"), 1)
	}
	// Every object is at ws/<workspace>/assets/<id>, whatever its name.
	files := b.objectFiles(t)
	require.Len(t, files, len(accepted))
	for _, f := range files {
		dir, id := filepath.Split(f)
		require.Equal(t, "ws/"+b.admin.WorkspaceID+"/assets/", dir)
		require.True(t, strings.HasPrefix(id, "as_"), f)
	}

	refused := []string{
		"", " ", strings.Repeat("名", 201), "line\nbreak", "carriage\rreturn", "nul\x00byte", "tab\tbed", "del\x7f", "bell\a",
	}
	for _, name := range refused {
		u := b.upload(t, b.admin.APIKey, name, "text/plain", strings.NewReader("x"), 1)
		require.Equal(t, http.StatusBadRequest, u.status, "name %q", name)
		require.Equal(t, client.ErrorCodeInvalidArgument, u.err.Error.Code)
		require.Contains(t, detailFields(&u.err), "name", "name %q", name)
	}
	// Invalid UTF-8 and a missing name, sent raw.
	for _, query := range []string{"name=%FF%FE", "name=ok%C3", ""} {
		req, err := http.NewRequest(http.MethodPost, b.h.URL+"/api/v1/assets?"+query, strings.NewReader("x"))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+b.admin.APIKey)
		resp, err := b.h.HTTP.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "query %q", query)
	}
	l, err := b.api.ListAssetsWithResponse(t.Context(), nil)
	require.NoError(t, err)
	require.Len(t, l.JSON200.Items, len(accepted))
}

// TestAssetsContentTypes: the media type is kept in canonical form; one that
// does not parse is 415 and stores nothing.
func TestAssetsContentTypes(t *testing.T) {
	t.Parallel()
	b := setupAssets(t)
	for give, want := range map[string]string{
		"IMAGE/PNG":        "image/png",
		"application/json": "application/json",
		"text/csv; header=present; charset=utf-8":                                 "text/csv; charset=utf-8; header=present",
		"application/vnd.openxmlformats-officedocument.wordprocessingml.document": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
	} {
		a := b.mustUpload(t, "f", give, []byte("{}"))
		require.Equal(t, want, a.ContentType, give)
		resp, _ := b.content(t, b.admin.APIKey, a.Id)
		require.Equal(t, want, resp.Header.Get("Content-Type"))
	}
	before := len(b.objectFiles(t))
	for _, ct := range []string{"not a type", "text/", "/plain", "text/plain; charset", longMediaType()} {
		u := b.upload(t, b.admin.APIKey, "f", ct, strings.NewReader("x"), 1)
		require.Equal(t, http.StatusUnsupportedMediaType, u.status, "content type %q", ct)
		require.Equal(t, client.ErrorCodeUnsupportedMediaType, u.err.Error.Code)
	}
	require.Len(t, b.objectFiles(t), before)
}

// TestAssetsUploadQueryIsNotLogged: the name travels in the query string,
// which is never logged.
func TestAssetsUploadQueryIsNotLogged(t *testing.T) {
	t.Parallel()
	b := setupAssets(t)
	b.mustUpload(t, "payroll-2025-confidential", "text/plain", []byte("x"))
	require.NotContains(t, b.h.Logs.String(), "payroll-2025-confidential")
	require.NotContains(t, b.h.Logs.String(), url.QueryEscape("payroll-2025-confidential"))
}

// zeros reads endless zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// longMediaType is a valid media type of more than 255 characters.
func longMediaType() string {
	mt := "application/x-long"
	for i := range 20 {
		mt += fmt.Sprintf("; p%d=%s", i, strings.Repeat("v", 10))
	}
	return mt
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAssetsUploadIdempotency: an upload honours Idempotency-Key without
// buffering its body: the same name, type and bytes replay the first answer;
// different ones are 409; an upload that failed (413) frees its key.
func TestAssetsUploadIdempotency(t *testing.T) {
	t.Parallel()
	b := setupAssets(t, func(c *config.Config) { c.Limits.AssetBytes = 1 << 20 })
	data := bytes.Repeat([]byte("idempotent "), 5000)
	first := b.upload(t, b.admin.APIKey, "retry.txt", "text/plain", bytes.NewReader(data), int64(len(data)), "Idempotency-Key", "k1")
	require.Equal(t, http.StatusCreated, first.status, first.err)
	require.Empty(t, first.header.Get("Idempotent-Replayed"))

	// The same request again, with a length or chunked: the first answer.
	for _, size := range []int64{int64(len(data)), -1} {
		again := b.upload(t, b.admin.APIKey, "retry.txt", "text/plain", bytes.NewReader(data), size, "Idempotency-Key", "k1")
		require.Equal(t, http.StatusCreated, again.status, again.err)
		require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
		require.Equal(t, first.asset, again.asset)
		require.Equal(t, first.header.Get("Location"), again.header.Get("Location"))
		require.Equal(t, first.header.Get("ETag"), again.header.Get("ETag"))
	}
	// Different bytes, name or type under the key: 409, nothing created.
	changed := append(bytes.Clone(data[:len(data)-1]), '!')
	for _, c := range []struct {
		name, ct string
		body     []byte
	}{{"retry.txt", "text/plain", changed}, {"other.txt", "text/plain", data}, {"retry.txt", "text/csv", data}, {"retry.txt", "text/plain", data[:10]}} {
		u := b.upload(t, b.admin.APIKey, c.name, c.ct, bytes.NewReader(c.body), int64(len(c.body)), "Idempotency-Key", "k1")
		require.Equal(t, http.StatusConflict, u.status)
		require.Equal(t, client.ErrorCodeConflict, u.err.Error.Code)
	}
	// A body over the limit under the key: 409, without storing it.
	big := bytes.Repeat([]byte("x"), 2<<20)
	u := b.upload(t, b.admin.APIKey, "retry.txt", "text/plain", bytes.NewReader(big), -1, "Idempotency-Key", "k1")
	require.Equal(t, http.StatusConflict, u.status)
	require.Len(t, b.objectFiles(t), 1)

	// A failed upload (413) does not hold its key: the corrected retry runs.
	tooBig := b.upload(t, b.admin.APIKey, "big.bin", "", bytes.NewReader(big), int64(len(big)), "Idempotency-Key", "k2")
	require.Equal(t, http.StatusRequestEntityTooLarge, tooBig.status)
	ok := b.upload(t, b.admin.APIKey, "big.bin", "", bytes.NewReader(big[:1000]), 1000, "Idempotency-Key", "k2")
	require.Equal(t, http.StatusCreated, ok.status, ok.err)
	require.Empty(t, ok.header.Get("Idempotent-Replayed"))

	// While the first upload with a key is still sending, another request
	// with it is 409 at once, without waiting for either body.
	pr, pw := io.Pipe()
	t.Cleanup(func() { _ = pw.Close() })
	done := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, b.h.URL+"/api/v1/assets?name=slow", pr)
		req.Header.Set("Authorization", "Bearer "+b.admin.APIKey)
		req.Header.Set("Idempotency-Key", "k3")
		resp, err := b.h.HTTP.Do(req)
		if err != nil {
			done <- 0
			return
		}
		_ = resp.Body.Close()
		done <- resp.StatusCode
	}()
	_, err := pw.Write([]byte("first part"))
	require.NoError(t, err)
	eventually(t, 5*time.Second, "the first upload is being stored", func() bool {
		var n int
		require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT count(*) FROM asset_upload`).Scan(&n))
		return n == 1
	})
	second := b.upload(t, b.admin.APIKey, "slow", "", io.LimitReader(zeros{}, 1<<30), -1, "Idempotency-Key", "k3")
	require.Equal(t, http.StatusConflict, second.status)
	require.Contains(t, second.err.Error.Message, "in progress")
	require.NoError(t, pw.Close())
	require.Equal(t, http.StatusCreated, <-done)

	l, err := b.api.ListAssetsWithResponse(t.Context(), nil)
	require.NoError(t, err)
	require.Len(t, l.JSON200.Items, 3)
}
