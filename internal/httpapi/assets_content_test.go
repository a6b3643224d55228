package httpapi_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/client"
)

// TestAssetsContentRanges covers single byte ranges, their edges, and the
// ranges that are ignored (whole content) or unsatisfiable (416).
func TestAssetsContentRanges(t *testing.T) {
	t.Parallel()
	b := setupAssets(t)
	a := b.mustUpload(t, "digits.txt", "text/plain", []byte("0123456789"))
	etag := assetETag(a)

	partial := []struct{ rng, body, contentRange string }{
		{"bytes=0-0", "0", "bytes 0-0/10"},
		{"bytes=2-5", "2345", "bytes 2-5/10"},
		{"bytes=7-", "789", "bytes 7-9/10"},
		{"bytes=9-9", "9", "bytes 9-9/10"},
		{"bytes=-3", "789", "bytes 7-9/10"},
		{"bytes=-10", "0123456789", "bytes 0-9/10"},
		{"bytes=-20", "0123456789", "bytes 0-9/10"},
		{"bytes=5-100", "56789", "bytes 5-9/10"},
		{"bytes=0-", "0123456789", "bytes 0-9/10"},
		{"BYTES = 1-2", "12", "bytes 1-2/10"},
	}
	for _, c := range partial {
		resp, raw := b.content(t, b.admin.APIKey, a.Id, "Range", c.rng)
		require.Equal(t, http.StatusPartialContent, resp.StatusCode, c.rng)
		require.Equal(t, c.body, string(raw), c.rng)
		require.Equal(t, c.contentRange, resp.Header.Get("Content-Range"), c.rng)
		require.Equal(t, len(c.body), int(resp.ContentLength), c.rng)
		require.Equal(t, etag, resp.Header.Get("ETag"))
		require.Equal(t, "text/plain", resp.Header.Get("Content-Type"))
	}

	for _, rng := range []string{"bytes=10-", "bytes=10-20", "bytes=99-", "bytes=-0"} {
		resp, raw := b.content(t, b.admin.APIKey, a.Id, "Range", rng)
		require.Equal(t, http.StatusRequestedRangeNotSatisfiable, resp.StatusCode, rng)
		require.Equal(t, "bytes */10", resp.Header.Get("Content-Range"), rng)
		var e client.Error
		require.NoError(t, json.Unmarshal(raw, &e))
		require.Equal(t, client.ErrorCodeRangeNotSatisfiable, e.Error.Code)
	}

	// Several ranges, other units and malformed headers are ignored.
	for _, rng := range []string{"bytes=0-1,3-4", "items=0-1", "bytes=abc", "bytes=5-2", "bytes=-", "bytes=1-2-3", "bytes=+1-2", "bytes= -1-", "0-1", "bytes=99999999999999999999-"} {
		resp, raw := b.content(t, b.admin.APIKey, a.Id, "Range", rng)
		require.Equal(t, http.StatusOK, resp.StatusCode, rng)
		require.Equal(t, "0123456789", string(raw), rng)
		require.Empty(t, resp.Header.Get("Content-Range"), rng)
	}

	// If-Range: the range only while the ETag is current; a date never matches.
	resp, raw := b.content(t, b.admin.APIKey, a.Id, "Range", "bytes=0-1", "If-Range", etag)
	require.Equal(t, http.StatusPartialContent, resp.StatusCode)
	require.Equal(t, "01", string(raw))
	for _, ifRange := range []string{`"` + a.Id + `:9"`, "W/" + etag, "Tue, 15 Nov 1994 08:12:31 GMT"} {
		resp, raw = b.content(t, b.admin.APIKey, a.Id, "Range", "bytes=0-1", "If-Range", ifRange)
		require.Equal(t, http.StatusOK, resp.StatusCode, ifRange)
		require.Equal(t, "0123456789", string(raw))
	}

	// If-None-Match: 304 with the ETag and no body while current.
	for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
		resp, raw = b.content(t, b.admin.APIKey, a.Id, "If-None-Match", inm)
		require.Equal(t, http.StatusNotModified, resp.StatusCode, inm)
		require.Empty(t, raw)
		require.Equal(t, etag, resp.Header.Get("ETag"))
	}
	resp, _ = b.content(t, b.admin.APIKey, a.Id, "If-None-Match", `"`+a.Id+`:0"`)
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// The answer has the content's type, so Accept is not held to JSON.
	for _, accept := range []string{"text/plain", "application/octet-stream", "image/png", "application/json"} {
		resp, raw = b.content(t, b.admin.APIKey, a.Id, "Accept", accept)
		require.Equal(t, http.StatusOK, resp.StatusCode, accept)
		require.Equal(t, "0123456789", string(raw))
	}
	// Other asset operations still answer JSON only.
	g := b.h.Get(t, "/api/v1/assets/"+a.Id, "Authorization", "Bearer "+b.admin.APIKey, "Accept", "text/plain")
	require.Equal(t, http.StatusNotAcceptable, g.StatusCode)

	// A range on empty content is ignored; the whole (empty) content is sent.
	empty := b.mustUpload(t, "empty", "text/plain", nil)
	for _, rng := range []string{"bytes=0-", "bytes=-1", "bytes=0-0"} {
		resp, raw = b.content(t, b.admin.APIKey, empty.Id, "Range", rng)
		require.Equal(t, http.StatusOK, resp.StatusCode, rng)
		require.Empty(t, raw)
	}

	// A retired asset's content is still served, ranges included.
	r, err := b.api.RetireAssetWithResponse(t.Context(), a.Id, &client.RetireAssetParams{IfMatch: etag})
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, r.StatusCode())
	resp, raw = b.content(t, b.admin.APIKey, a.Id, "Range", "bytes=-2")
	require.Equal(t, http.StatusPartialContent, resp.StatusCode)
	require.Equal(t, "89", string(raw))
	require.Equal(t, `"`+a.Id+`:2"`, resp.Header.Get("ETag"))
}
