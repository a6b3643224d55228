package httpapi_test

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/objectstore/objectstoretest"
)

// TestAssetsOnS3: the same API over an S3 bucket (versitygw): a multipart
// upload of unknown size, ranges across a part boundary, and uploads that
// are too large or cut off leave nothing in the bucket, not even parts.
func TestAssetsOnS3(t *testing.T) {
	t.Parallel()
	s3 := objectstoretest.S3Config(t)
	b := setupAssets(t, func(c *config.Config) {
		c.ObjectStore = config.ObjectStore{URL: "s3://" + s3.Bucket + "/svc", Endpoint: s3.Endpoint, Region: s3.Region,
			AccessKeyID: s3.AccessKeyID, SecretAccessKey: s3.SecretAccessKey, PathStyle: true}
		c.Limits.AssetBytes = 12 << 20
	})
	bucket := objectstoretest.Client(t, s3)
	objects := func() (keys []string) {
		for o := range bucket.ListObjects(t.Context(), s3.Bucket, minio.ListObjectsOptions{Recursive: true}) {
			require.NoError(t, o.Err)
			keys = append(keys, o.Key)
		}
		for u := range bucket.ListIncompleteUploads(t.Context(), s3.Bucket, "", true) {
			require.NoError(t, u.Err)
			keys = append(keys, "incomplete:"+u.Key)
		}
		return keys
	}

	data := make([]byte, 9<<20+5)
	_, err := rand.Read(data)
	require.NoError(t, err)
	u := b.upload(t, b.admin.APIKey, "big.bin", "application/octet-stream", bytes.NewReader(data), -1)
	require.Equal(t, 201, u.status, u.err)
	require.Equal(t, sha256Hex(data), u.asset.Sha256)
	require.Equal(t, []string{"svc/ws/" + b.admin.WorkspaceID + "/assets/" + u.asset.Id}, objects())

	resp, raw := b.content(t, b.admin.APIKey, u.asset.Id, "Range", fmt.Sprintf("bytes=%d-%d", 8<<20-3, 8<<20+2))
	require.Equal(t, http.StatusPartialContent, resp.StatusCode)
	require.Equal(t, data[8<<20-3:8<<20+3], raw)
	resp, raw = b.content(t, b.admin.APIKey, u.asset.Id)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.True(t, bytes.Equal(data, raw))

	// Too large, chunked: refused after a part was already uploaded.
	over := b.upload(t, b.admin.APIKey, "over", "", io.LimitReader(zeros{}, 13<<20), -1)
	require.Equal(t, http.StatusRequestEntityTooLarge, over.status)

	// Cut off after more than one part.
	addr := strings.TrimPrefix(b.h.URL, "http://")
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	_, err = io.WriteString(conn, "POST /api/v1/assets?name=cut HTTP/1.1\r\nHost: "+addr+"\r\nAuthorization: Bearer "+b.admin.APIKey+
		"\r\nContent-Length: 11000000\r\n\r\n")
	require.NoError(t, err)
	_, err = conn.Write(make([]byte, 9<<20))
	require.NoError(t, err)
	require.NoError(t, conn.Close())
	eventually(t, 10*time.Second, "the cut-off upload was logged", func() bool {
		return strings.Count(b.h.Logs.String(), `"route":"/api/v1/assets","status":400`) == 1
	})

	require.Equal(t, []string{"svc/ws/" + b.admin.WorkspaceID + "/assets/" + u.asset.Id}, objects(), "nothing but the first asset")
	var assets, uploads int
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM asset), (SELECT count(*) FROM asset_upload)`).Scan(&assets, &uploads))
	require.Equal(t, 1, assets)
	require.Zero(t, uploads)
}
