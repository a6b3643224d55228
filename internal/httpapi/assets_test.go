package httpapi_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/client"
	"github.com/svcdev/svc/internal/apitest"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/testfactory"
)

type assetsBundle struct {
	h      *apitest.Harness
	admin  testfactory.Admin
	api    *client.ClientWithResponses
	viewer testfactory.Member
}

func setupAssets(t *testing.T, configure ...func(*config.Config)) *assetsBundle {
	t.Helper()
	h := apitest.Start(t, apitest.Options{Configure: func(c *config.Config) {
		for _, f := range configure {
			f(c)
		}
	}})
	admin := testfactory.Bootstrap(t, h.App.Pool)
	viewer := testfactory.AddMember(t, h.App.Pool, admin.OrganizationID, admin.WorkspaceID, testfactory.MemberOpts{WorkspaceRole: "viewer"})
	return &assetsBundle{h: h, admin: admin, api: h.Client(t, admin.APIKey), viewer: viewer}
}

// uploaded is the answer to an upload.
type uploaded struct {
	status int
	header http.Header
	asset  client.Asset
	err    client.Error
}

// upload sends body as an asset named name. size is the Content-Length to
// send, or -1 to send the body chunked; contentType "" sends none.
func (b *assetsBundle) upload(t *testing.T, token, name, contentType string, body io.Reader, size int64, header ...string) uploaded {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.h.URL+"/api/v1/assets?name="+url.QueryEscape(name), body)
	require.NoError(t, err)
	req.ContentLength = size
	if size < 0 {
		req.Body = io.NopCloser(body) // hide the length from the client: chunked
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := b.h.HTTP.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	out := uploaded{status: resp.StatusCode, header: resp.Header}
	if resp.StatusCode == http.StatusCreated {
		require.NoError(t, json.Unmarshal(raw, &out.asset), string(raw))
	} else {
		require.NoError(t, json.Unmarshal(raw, &out.err), string(raw))
	}
	return out
}

// mustUpload uploads data as the admin and returns the new asset.
func (b *assetsBundle) mustUpload(t *testing.T, name, contentType string, data []byte) client.Asset {
	t.Helper()
	u := b.upload(t, b.admin.APIKey, name, contentType, bytes.NewReader(data), int64(len(data)))
	require.Equal(t, http.StatusCreated, u.status, u.err)
	return u.asset
}

// content downloads an asset's content with the given request headers.
func (b *assetsBundle) content(t *testing.T, token, assetID string, header ...string) (*http.Response, []byte) {
	t.Helper()
	resp := b.h.Get(t, "/api/v1/assets/"+assetID+"/content", append([]string{"Authorization", "Bearer " + token}, header...)...)
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, raw
}

// objectDir is the process's file object store.
func (b *assetsBundle) objectDir() string {
	return strings.TrimPrefix(b.h.Config.ObjectStore.URL, "file://")
}

// objectFiles lists every file in the object store, relative to it.
func (b *assetsBundle) objectFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(b.objectDir(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(b.objectDir(), p)
			out = append(out, filepath.ToSlash(rel))
		}
		return err
	}))
	return out
}

// requireNothingStored checks that no asset, no upload in flight and no
// object (not even a temporary file) exists.
func (b *assetsBundle) requireNothingStored(t *testing.T) {
	t.Helper()
	var assets, uploads int
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM asset), (SELECT count(*) FROM asset_upload)`).Scan(&assets, &uploads))
	require.Zero(t, assets, "asset rows")
	require.Zero(t, uploads, "upload rows")
	require.Empty(t, b.objectFiles(t), "objects or temporary files")
}

func assetETag(a client.Asset) string { return `"` + a.Id + ":" + strconv.Itoa(a.Version) + `"` }

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func TestAssetsUploadReadList(t *testing.T) {
	t.Parallel()
	b := setupAssets(t)
	data := []byte("quarterly numbers\n")
	u := b.upload(t, b.admin.APIKey, "Q3 report.txt", "Text/Plain; Charset=UTF-8", bytes.NewReader(data), int64(len(data)))
	require.Equal(t, http.StatusCreated, u.status, u.err)
	a := u.asset
	// No Content-Type is application/octet-stream; a chunked body works; so
	// does an empty one.
	blob := bytes.Repeat([]byte{0, 1, 2, 0xff}, 70000)
	c := b.upload(t, b.admin.APIKey, "blob.bin", "", bytes.NewReader(blob), -1)
	require.Equal(t, http.StatusCreated, c.status, c.err)
	empty := b.mustUpload(t, "empty", "application/x-empty", nil)

	// The subtests only read what the uploads left.
	t.Run("UploadAnswersTheAsset", func(t *testing.T) {
		t.Parallel()
		require.True(t, strings.HasPrefix(a.Id, "as_"), a.Id)
		require.Equal(t, "Q3 report.txt", a.Name)
		require.Equal(t, "text/plain; charset=UTF-8", a.ContentType, "the media type in canonical form")
		require.Equal(t, int64(len(data)), a.Size)
		require.Equal(t, sha256Hex(data), a.Sha256)
		require.False(t, a.RetiredAt.IsSpecified() && !a.RetiredAt.IsNull(), "not retired")
		require.Equal(t, 1, a.Version)
		require.Equal(t, b.admin.PrincipalID, a.CreatedById)
		require.Equal(t, b.admin.PrincipalID, a.UpdatedById)
		require.Equal(t, "/api/v1/assets/"+a.Id, u.header.Get("Location"))
		require.Equal(t, assetETag(a), u.header.Get("ETag"))
	})

	t.Run("ObjectsAreStoredUnderTheWorkspacesPrefixOnly", func(t *testing.T) {
		t.Parallel()
		prefix := "ws/" + b.admin.WorkspaceID + "/assets/"
		require.ElementsMatch(t, []string{prefix + a.Id, prefix + c.asset.Id, prefix + empty.Id}, b.objectFiles(t))
	})

	t.Run("GetReadsTheAsset", func(t *testing.T) {
		t.Parallel()
		got, err := b.api.GetAssetWithResponse(t.Context(), a.Id)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, got.StatusCode())
		require.Equal(t, a, *got.JSON200)
		require.Equal(t, assetETag(a), got.HTTPResponse.Header.Get("ETag"))
	})

	t.Run("ContentIsTheBytesWithTheirHeaders", func(t *testing.T) {
		t.Parallel()
		resp, raw := b.content(t, b.admin.APIKey, a.Id)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, data, raw)
		require.Equal(t, "text/plain; charset=UTF-8", resp.Header.Get("Content-Type"))
		require.Equal(t, strconv.Itoa(len(data)), resp.Header.Get("Content-Length"))
		require.Equal(t, assetETag(a), resp.Header.Get("ETag"))
		require.Equal(t, "bytes", resp.Header.Get("Accept-Ranges"))
		require.Equal(t, `attachment; filename="Q3 report.txt"`, resp.Header.Get("Content-Disposition"))
		require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	})

	t.Run("ChunkedUploadWithoutContentType", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, "application/octet-stream", c.asset.ContentType)
		require.Equal(t, int64(len(blob)), c.asset.Size)
		require.Equal(t, sha256Hex(blob), c.asset.Sha256)
		_, raw := b.content(t, b.admin.APIKey, c.asset.Id)
		require.True(t, bytes.Equal(blob, raw))
	})

	t.Run("EmptyUpload", func(t *testing.T) {
		t.Parallel()
		require.Zero(t, empty.Size)
		require.Equal(t, sha256Hex(nil), empty.Sha256)
		resp, raw := b.content(t, b.admin.APIKey, empty.Id)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Empty(t, raw)
		require.Equal(t, "0", resp.Header.Get("Content-Length"))
	})

	t.Run("ListIsNewestFirstOnePageAtATime", func(t *testing.T) {
		t.Parallel()
		one := 1
		var ids []string
		var cursor *string
		for {
			p, err := b.api.ListAssetsWithResponse(t.Context(), &client.ListAssetsParams{Limit: &one, Cursor: cursor})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, p.StatusCode(), string(p.Body))
			for _, it := range p.JSON200.Items {
				ids = append(ids, it.Id)
			}
			if p.JSON200.NextCursor.IsNull() {
				break
			}
			next, _ := p.JSON200.NextCursor.Get()
			cursor = &next
		}
		require.Equal(t, []string{empty.Id, c.asset.Id, a.Id}, ids)
	})

	t.Run("AViewerReadsButCannotUploadOrRetire", func(t *testing.T) {
		t.Parallel()
		viewer := b.h.Client(t, b.viewer.Token)
		vg, err := viewer.GetAssetWithResponse(t.Context(), a.Id)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, vg.StatusCode())
		resp, raw := b.content(t, b.viewer.Token, a.Id)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, data, raw)
		vu := b.upload(t, b.viewer.Token, "nope", "text/plain", strings.NewReader("x"), 1)
		require.Equal(t, http.StatusForbidden, vu.status)
		require.Equal(t, client.ErrorCodePermissionDenied, vu.err.Error.Code)
		etag := assetETag(a)
		vd, err := viewer.RetireAssetWithResponse(t.Context(), a.Id, &client.RetireAssetParams{IfMatch: etag})
		require.NoError(t, err)
		require.Equal(t, http.StatusForbidden, vd.StatusCode())
	})

	t.Run("TheUploadIsAudited", func(t *testing.T) {
		t.Parallel()
		var action, fieldsCSV string
		var version int
		require.NoError(t, b.h.App.Pool.QueryRow(t.Context(),
			`SELECT action, array_to_string(changed_fields, ','), version FROM audit_event WHERE subject_type = 'asset' AND subject_id = $1`, a.Id).Scan(&action, &fieldsCSV, &version))
		require.Equal(t, "asset.created", action)
		require.Equal(t, "content_type,name,sha256,size", fieldsCSV)
		require.Equal(t, 1, version)
	})
}

// TestAssetsThroughTheTypedClient: the generated Go client sends an asset's
// bytes as an io.Reader with their media type, and reads them back as bytes,
// whole or one range, with no conversion on the caller's side.
func TestAssetsThroughTheTypedClient(t *testing.T) {
	t.Parallel()
	b := setupAssets(t)
	data := []byte{0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff}

	up, err := b.api.UploadAssetWithBodyWithResponse(t.Context(), &client.UploadAssetParams{Name: "logo.png"}, "image/png", bytes.NewReader(data))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, up.StatusCode(), string(up.Body))
	a := *up.JSON201
	require.Equal(t, "image/png", a.ContentType)
	require.Equal(t, int64(len(data)), a.Size)
	require.Equal(t, sha256Hex(data), a.Sha256)

	whole, err := b.api.GetAssetContentWithResponse(t.Context(), a.Id, &client.GetAssetContentParams{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, whole.StatusCode())
	require.Equal(t, data, whole.Body)
	require.Equal(t, "image/png", whole.HTTPResponse.Header.Get("Content-Type"))
	require.Equal(t, assetETag(a), whole.HTTPResponse.Header.Get("ETag"))

	rng := "bytes=1-3"
	part, err := b.api.GetAssetContentWithResponse(t.Context(), a.Id, &client.GetAssetContentParams{Range: &rng})
	require.NoError(t, err)
	require.Equal(t, http.StatusPartialContent, part.StatusCode())
	require.Equal(t, data[1:4], part.Body)
}

// TestAssetsRetire: DELETE needs If-Match, retires once (version and audit),
// and the content stays readable.
func TestAssetsRetire(t *testing.T) {
	t.Parallel()
	b := setupAssets(t)
	a := b.mustUpload(t, "logo.svg", "image/svg+xml", []byte("<svg/>"))

	retire := func(ifMatch string, edit ...client.RequestEditorFn) *client.RetireAssetResponse {
		t.Helper()
		r, err := b.api.RetireAssetWithResponse(t.Context(), a.Id, &client.RetireAssetParams{IfMatch: ifMatch}, edit...)
		require.NoError(t, err)
		return r
	}
	require.Equal(t, http.StatusPreconditionRequired, retire("", apitest.WithoutIfMatch).StatusCode())
	require.Equal(t, http.StatusPreconditionRequired, retire("").StatusCode(), "an empty If-Match")
	require.Equal(t, http.StatusPreconditionFailed, retire(`"`+a.Id+`:7"`).StatusCode())
	r := retire(assetETag(a))
	require.Equal(t, http.StatusNoContent, r.StatusCode())
	require.Empty(t, r.Body)

	got, err := b.api.GetAssetWithResponse(t.Context(), a.Id)
	require.NoError(t, err)
	v := *got.JSON200
	require.Equal(t, 2, v.Version)
	retiredAt, err := v.RetiredAt.Get()
	require.NoError(t, err, "retired_at is set")
	require.False(t, retiredAt.IsZero())
	require.Equal(t, a.Sha256, v.Sha256)

	// The content stays readable for history.
	resp, raw := b.content(t, b.admin.APIKey, a.Id)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "<svg/>", string(raw))
	require.Equal(t, assetETag(v), resp.Header.Get("ETag"))

	// Retiring again changes nothing: same version, one audit event.
	require.Equal(t, http.StatusNoContent, retire(assetETag(v)).StatusCode())
	require.Equal(t, http.StatusNoContent, retire("*").StatusCode())
	again, err := b.api.GetAssetWithResponse(t.Context(), a.Id)
	require.NoError(t, err)
	require.Equal(t, v, *again.JSON200)
	var n int
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(),
		`SELECT count(*) FROM audit_event WHERE subject_id = $1 AND action = 'asset.retired' AND changed_fields = '{retired_at}' AND version = 2`, a.Id).Scan(&n))
	require.Equal(t, 1, n)

	// Retired assets are still listed.
	l, err := b.api.ListAssetsWithResponse(t.Context(), nil)
	require.NoError(t, err)
	require.Equal(t, []client.Asset{v}, l.JSON200.Items)
}

// TestAssetsAcrossWorkspaces: another workspace's asset
// answers exactly like a missing one on every operation, with and without
// If-Match, and gives away no ETag.
func TestAssetsAcrossWorkspaces(t *testing.T) {
	t.Parallel()
	b := setupAssets(t)
	a := b.mustUpload(t, "secret plan.txt", "text/plain", []byte("ours"))
	ws, err := b.api.CreateWorkspaceWithResponse(t.Context(), nil, client.CreateWorkspaceRequest{Name: "other"})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, ws.StatusCode(), string(ws.Body))
	other := b.h.Client(t, ws.JSON201.ApiKey)
	otherToken := ws.JSON201.ApiKey

	answers := map[string][]string{}
	for _, assetID := range []string{a.Id, "as_01jd5v6w1q3yb8j8y3tn9z2k7h", "nonsense"} {
		var got []string
		g, err := other.GetAssetWithResponse(t.Context(), assetID)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, g.StatusCode())
		require.Empty(t, g.HTTPResponse.Header.Get("ETag"))
		got = append(got, g.JSON404.Error.Message)

		resp, raw := b.content(t, otherToken, assetID)
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		require.Empty(t, resp.Header.Get("ETag"))
		require.NotContains(t, string(raw), "ours")
		var e client.Error
		require.NoError(t, json.Unmarshal(raw, &e))
		got = append(got, e.Error.Message)

		resp, _ = b.content(t, otherToken, assetID, "Range", "bytes=0-1")
		require.Equal(t, http.StatusNotFound, resp.StatusCode)

		// An empty If-Match is refused before any asset is looked up.
		d, err := other.RetireAssetWithResponse(t.Context(), assetID, &client.RetireAssetParams{})
		require.NoError(t, err)
		require.Equal(t, http.StatusPreconditionRequired, d.StatusCode())
		for _, etag := range []string{assetETag(a), "*"} {
			d, err := other.RetireAssetWithResponse(t.Context(), assetID, &client.RetireAssetParams{IfMatch: etag})
			require.NoError(t, err)
			require.Equal(t, http.StatusNotFound, d.StatusCode(), "etag %q", etag)
			got = append(got, d.JSON404.Error.Message)
		}
		answers[assetID] = got
	}
	require.Equal(t, answers["as_01jd5v6w1q3yb8j8y3tn9z2k7h"], answers[a.Id], "the same answers as for a missing asset")
	l, err := other.ListAssetsWithResponse(t.Context(), nil)
	require.NoError(t, err)
	require.Empty(t, l.JSON200.Items)

	// Still ours, unretired.
	g, err := b.api.GetAssetWithResponse(t.Context(), a.Id)
	require.NoError(t, err)
	require.Equal(t, a, *g.JSON200)
}
