package console_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/config"
)

// uploadPart is one part of a multipart form: a field, or a file when
// filename is set.
type uploadPart struct {
	name, filename, contentType, content string
}

// postMultipart sends a multipart/form-data form with parts in their order.
func (br *browser) postMultipart(t *testing.T, path string, parts ...uploadPart) page {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		if p.filename != "" {
			h.Set("Content-Disposition", `form-data; name="`+p.name+`"; filename="`+p.filename+`"`)
			h.Set("Content-Type", p.contentType)
		} else {
			h.Set("Content-Disposition", `form-data; name="`+p.name+`"`)
		}
		pw, err := w.CreatePart(h)
		require.NoError(t, err)
		_, err = pw.Write([]byte(p.content))
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	req, err := http.NewRequest(http.MethodPost, br.b.h.URL+path, &buf)
	require.NoError(t, err)
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("Origin", br.b.h.URL)
	return br.do(t, req)
}

func TestEditorsUploadDownloadAndRetireAssets(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *config.Config) { c.Limits.AssetBytes = 64 })
	br, _ := b.signedInMember(t, "editor")
	assets := b.workspacePath("assets")

	empty := br.get(t, assets)
	require.Equal(t, http.StatusOK, empty.status, empty.body)
	requirePageHeaders(t, empty)
	require.Contains(t, empty.body, "No assets yet")
	require.Contains(t, empty.body, `enctype="multipart/form-data"`)
	require.Contains(t, empty.body, `<progress data-upload-progress`)
	csrf := hiddenFields(empty.body)["csrf_token"]
	token := uploadPart{name: "csrf_token", content: csrf}

	// The token must come first: a form that starts with its file is refused
	// unread, and nothing is stored.
	content := "hello <b>world</b>\n"
	p := br.postMultipart(t, assets, uploadPart{name: "file", filename: "notes.txt", contentType: "text/plain", content: content}, token)
	require.Equal(t, http.StatusForbidden, p.status, p.body)
	p = br.postMultipart(t, assets, uploadPart{name: "csrf_token", content: "forged"},
		uploadPart{name: "file", filename: "notes.txt", contentType: "text/plain", content: content})
	require.Equal(t, http.StatusForbidden, p.status, p.body)
	p = br.postMultipart(t, assets, token)
	require.Equal(t, http.StatusUnprocessableEntity, p.status, p.body)
	require.Regexp(t, `field-error[^>]*>choose a file`, p.body)
	p = br.postMultipart(t, assets, token, uploadPart{name: "file", filename: "big.bin", contentType: "application/octet-stream", content: string(make([]byte, 65))})
	require.Equal(t, http.StatusRequestEntityTooLarge, p.status, p.body)
	var n int
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT count(*) FROM asset WHERE workspace_id = $1`, b.admin.WorkspaceID).Scan(&n))
	require.Zero(t, n)

	p = br.postMultipart(t, assets, token, uploadPart{name: "file", filename: "<b>notes.txt", contentType: "text/plain", content: content})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	loc := p.header.Get("Location")
	require.Regexp(t, `^`+regexp.QuoteMeta(assets)+`/as_[0-9a-z]+$`, loc)
	page := br.get(t, loc)
	require.Equal(t, http.StatusOK, page.status, page.body)
	require.Contains(t, page.body, "is uploaded (19 bytes)")
	require.Contains(t, page.body, "&lt;b&gt;notes.txt")
	require.NotContains(t, page.body, "<b>notes")
	sum := sha256.Sum256([]byte(content))
	require.Contains(t, page.body, hex.EncodeToString(sum[:]))
	require.Contains(t, br.get(t, assets).body, `href="`+loc+`"`)

	// The download streams the content as an attachment that cannot run here.
	d := br.get(t, loc+"/content")
	require.Equal(t, http.StatusOK, d.status)
	require.Equal(t, content, d.body)
	require.Equal(t, "text/plain", d.header.Get("Content-Type"))
	require.Equal(t, `attachment; filename="<b>notes.txt"`, d.header.Get("Content-Disposition"))
	require.Equal(t, "nosniff", d.header.Get("X-Content-Type-Options"))
	require.Contains(t, d.header.Get("Content-Security-Policy"), "sandbox")

	// Retiring with a stale ETag is refused; with the page's it retires.
	form := rowForm(t, page.body, loc+"/retire")
	stale := url.Values{"csrf_token": form["csrf_token"], "etag": {"\"x:9\""}}
	p = br.post(t, loc+"/retire", stale)
	require.Equal(t, http.StatusPreconditionFailed, p.status, p.body)
	p = br.post(t, loc+"/retire", form)
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	after := br.get(t, loc)
	require.Contains(t, after.body, "is retired")
	require.Contains(t, after.body, `<span class="status status-revoked">retired</span>`)
	require.NotContains(t, after.body, "Retire asset")
	require.Equal(t, content, br.get(t, loc+"/content").body, "a retired asset stays readable")
}

func TestViewersSeeAndDownloadAssetsReadOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	editor, _ := b.signedInMember(t, "editor")
	assets := b.workspacePath("assets")
	csrf := hiddenFields(editor.get(t, assets).body)["csrf_token"]
	p := editor.postMultipart(t, assets, uploadPart{name: "csrf_token", content: csrf},
		uploadPart{name: "file", filename: "a.txt", contentType: "text/plain", content: "a"})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	loc := p.header.Get("Location")

	viewer, _ := b.signedInMember(t, "viewer")
	list := viewer.get(t, assets)
	require.Equal(t, http.StatusOK, list.status, list.body)
	require.Contains(t, list.body, "a.txt")
	require.NotContains(t, list.body, `enctype="multipart/form-data"`)
	page := viewer.get(t, loc)
	require.NotContains(t, page.body, "Retire asset")
	require.Equal(t, "a", viewer.get(t, loc+"/content").body)
	vcsrf := hiddenFields(page.body)["csrf_token"]
	p = viewer.postMultipart(t, assets, uploadPart{name: "csrf_token", content: vcsrf},
		uploadPart{name: "file", filename: "b.txt", contentType: "text/plain", content: "b"})
	require.Equal(t, http.StatusForbidden, p.status, p.body)
	p = viewer.post(t, loc+"/retire", url.Values{"csrf_token": {vcsrf}, "etag": {"x"}})
	require.Equal(t, http.StatusForbidden, p.status, p.body)
}
