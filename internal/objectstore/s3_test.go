package objectstore_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/objectstore"
	"github.com/svcdev/svc/internal/objectstore/objectstoretest"
)

// TestS3Store runs the suite against a real S3-compatible server (versitygw,
// started by `make test`), a new bucket per test.
func TestS3Store(t *testing.T) {
	t.Parallel()
	var buckets sync.Map // objectstore.Store -> objectstore.S3Config
	objectstoretest.Run(t, func(t *testing.T) objectstore.Store {
		cfg := objectstoretest.S3Config(t)
		s, err := objectstore.OpenS3(cfg)
		require.NoError(t, err)
		require.NoError(t, s.Check(t.Context()))
		buckets.Store(s, cfg)
		return s
	}, objectstoretest.Hooks{NoLeftovers: func(t *testing.T, s objectstore.Store) {
		t.Helper()
		v, _ := buckets.Load(s)
		cfg := v.(objectstore.S3Config)
		c := objectstoretest.Client(t, cfg)
		for up := range c.ListIncompleteUploads(t.Context(), cfg.Bucket, "", true) {
			require.NoError(t, up.Err)
			require.Failf(t, "a failed Put left an incomplete multipart upload", "key %s", up.Key)
		}
	}})
}

// TestS3StorePrefix: a prefix in the URL is put before every key, and the
// store sees only its own keys.
func TestS3StorePrefix(t *testing.T) {
	t.Parallel()
	cfg := objectstoretest.S3Config(t)
	cfg.Prefix = "svc/prod"
	s, err := objectstore.OpenS3(cfg)
	require.NoError(t, err)
	key, err := objectstore.Key("ws_1", "assets", "as_1")
	require.NoError(t, err)
	_, err = s.Put(t.Context(), key, strings.NewReader("abc"), 3, objectstore.PutOptions{ContentType: "text/plain"})
	require.NoError(t, err)
	oi, err := objectstoretest.Client(t, cfg).StatObject(t.Context(), cfg.Bucket, "svc/prod/"+key, minio.StatObjectOptions{})
	require.NoError(t, err)
	require.Equal(t, int64(3), oi.Size)
	require.Equal(t, "text/plain", oi.ContentType)
	require.Contains(t, s.Describe(), "s3://"+cfg.Bucket+"/svc/prod at http://")
}

// TestS3StoreCheck: a missing bucket, wrong keys and an unreachable server are
// reported, without the secret in the message.
func TestS3StoreCheck(t *testing.T) {
	t.Parallel()
	cfg := objectstoretest.S3Config(t)
	missing := cfg
	missing.Bucket = cfg.Bucket + "-missing"
	s, err := objectstore.OpenS3(missing)
	require.NoError(t, err)
	require.ErrorContains(t, s.Check(t.Context()), "does not exist")

	wrong := cfg
	wrong.SecretAccessKey = "not-the-secret"
	s, err = objectstore.OpenS3(wrong)
	require.NoError(t, err)
	err = s.Check(t.Context())
	require.Error(t, err)
	require.NotContains(t, err.Error(), "not-the-secret")

	down := cfg
	down.Endpoint = "127.0.0.1:1"
	s, err = objectstore.OpenS3(down)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	require.Error(t, s.Check(ctx))
}

// unparsingFront opens a store on cfg's bucket through a proxy that, like a
// server built on fasthttp (versitygw) reading part of an earlier request
// left on a kept-alive connection, answers the first two requests of method
// for the object ws_test/assets/a 400 BadRequest and closes their
// connection. It answers the store, the object's key and how many such
// requests reached the proxy.
func unparsingFront(t *testing.T, method string) (*objectstore.S3Store, string, *atomic.Int32) {
	t.Helper()
	cfg := objectstoretest.S3Config(t)
	target, err := url.Parse("http://" + cfg.Endpoint)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var refused atomic.Int32
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == method && strings.HasSuffix(r.URL.Path, "/ws/ws_test/assets/a") && refused.Add(1) <= 2 {
			w.Header().Set("Content-Type", "application/xml")
			w.Header().Set("Connection", "close")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>BadRequest</Code>`+
				`<Message>An error occurred when parsing the HTTP request.</Message></Error>`)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	cfg.Endpoint = strings.TrimPrefix(front.URL, "http://")
	s, err := objectstore.OpenS3(cfg)
	require.NoError(t, err)
	key, err := objectstore.Key("ws_test", "assets", "a")
	require.NoError(t, err)
	_, err = s.Put(t.Context(), key, strings.NewReader("hello"), 5, objectstore.PutOptions{})
	require.NoError(t, err)
	return s, key, &refused
}

// A GET the server could not parse is sent again, and the read succeeds.
func TestS3StoreGetRetriesAnUnparsedRequest(t *testing.T) {
	t.Parallel()
	s, key, refused := unparsingFront(t, http.MethodGet)
	r, err := s.Get(t.Context(), key, 0, -1)
	require.NoError(t, err)
	b, err := io.ReadAll(r)
	require.NoError(t, r.Close())
	require.NoError(t, err)
	require.Equal(t, "hello", string(b))
	require.EqualValues(t, 3, refused.Load(), "refused twice, then read")
}

// A HEAD the server could not parse is sent again, and the stat succeeds.
func TestS3StoreStatRetriesAnUnparsedRequest(t *testing.T) {
	t.Parallel()
	s, key, refused := unparsingFront(t, http.MethodHead)
	info, err := s.Stat(t.Context(), key)
	require.NoError(t, err)
	require.EqualValues(t, 5, info.Size)
	require.EqualValues(t, 3, refused.Load(), "refused twice, then answered")
}
