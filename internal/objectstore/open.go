package objectstore

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/svcdev/svc/internal/config"
)

// Open builds the store object_store configures: file://DIR (DIR is
// everything after "file://", relative to the working directory unless
// absolute) or s3://BUCKET[/PREFIX] with the endpoint and keys of cfg. It
// makes no request; call Check to see that the store answers.
func Open(cfg config.ObjectStore) (Store, error) {
	if dir, ok := strings.CutPrefix(cfg.URL, "file://"); ok {
		return OpenFile(dir)
	}
	u, err := url.Parse(cfg.URL)
	if err != nil || u.Scheme != "s3" || u.Host == "" {
		return nil, fmt.Errorf("object_store.url must be file://DIR or s3://BUCKET[/PREFIX]")
	}
	return OpenS3(S3Config{
		Endpoint: cfg.Endpoint, Region: cfg.Region, AccessKeyID: cfg.AccessKeyID, SecretAccessKey: cfg.SecretAccessKey,
		UseTLS: cfg.UseTLS, PathStyle: cfg.PathStyle, Bucket: u.Host, Prefix: strings.Trim(u.Path, "/"),
	})
}
