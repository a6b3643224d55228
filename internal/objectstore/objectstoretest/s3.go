package objectstoretest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/oklog/ulid/v2"

	"github.com/svcdev/svc/internal/objectstore"
)

// The variables naming the S3-compatible test server; `make test` starts one
// (versitygw, scripts/services.sh) and sets them.
const (
	EnvS3Endpoint  = "TEST_S3_ENDPOINT"
	EnvS3AccessKey = "TEST_S3_ACCESS_KEY_ID"
	EnvS3SecretKey = "TEST_S3_SECRET_ACCESS_KEY"
)

// S3Config returns the configuration of a new, empty bucket on the test
// server, removed with its objects when the test ends. Like the database
// tests, it fails rather than skips when the server is not configured. Its
// Transport is the test's: the connections of every store and client made
// from it are closed when the test ends, so none outlives it.
func S3Config(t testing.TB) objectstore.S3Config {
	t.Helper()
	endpoint := os.Getenv(EnvS3Endpoint)
	if endpoint == "" {
		t.Fatalf("%s is not set: this test needs an S3-compatible server. Run `make test`, or start one with `scripts/services.sh start` and `eval \"$(scripts/services.sh env)\"`", EnvS3Endpoint)
	}
	tr, err := minio.DefaultTransport(false)
	if err != nil {
		t.Fatalf("s3 transport: %v", err)
	}
	t.Cleanup(tr.CloseIdleConnections) // after the bucket's removal below
	cfg := objectstore.S3Config{
		Endpoint: endpoint, Region: "us-east-1", PathStyle: true,
		AccessKeyID: os.Getenv(EnvS3AccessKey), SecretAccessKey: os.Getenv(EnvS3SecretKey),
		Bucket:    "svc-test-" + strings.ToLower(ulid.Make().String()),
		Transport: tr,
	}
	c := Client(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.MakeBucket(ctx, cfg.Bucket, minio.MakeBucketOptions{Region: cfg.Region}); err != nil {
		t.Fatalf("create test bucket on %s: %v", endpoint, err)
	}
	t.Cleanup(func() { removeBucket(t, c, cfg.Bucket) })
	return cfg
}

// Client returns a plain S3 client for cfg, to look behind a store's back.
func Client(t testing.TB, cfg objectstore.S3Config) *minio.Client {
	t.Helper()
	c, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds: credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, ""), Secure: cfg.UseTLS,
		Region: cfg.Region, BucketLookup: minio.BucketLookupPath, Transport: cfg.Transport,
	})
	if err != nil {
		t.Fatalf("s3 client: %v", err)
	}
	return c
}

// removeBucket empties and removes a test bucket.
func removeBucket(t testing.TB, c *minio.Client, bucket string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for up := range c.ListIncompleteUploads(ctx, bucket, "", true) {
		if up.Err == nil {
			_ = c.RemoveIncompleteUpload(ctx, bucket, up.Key)
		}
	}
	for obj := range c.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true}) {
		if obj.Err == nil {
			_ = c.RemoveObject(ctx, bucket, obj.Key, minio.RemoveObjectOptions{})
		}
	}
	if err := c.RemoveBucket(ctx, bucket); err != nil {
		t.Logf("remove test bucket %s: %v", bucket, err)
	}
}
