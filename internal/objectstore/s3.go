package objectstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Config locates a bucket of an S3-compatible service.
type S3Config struct {
	// Endpoint is host:port, without a scheme.
	Endpoint        string
	Region          string
	AccessKeyID     string
	SecretAccessKey string
	UseTLS          bool
	// PathStyle addresses the bucket in the path (http://host/bucket/key),
	// which every S3-compatible server accepts, rather than as a host name
	// (http://bucket.host/key), which needs DNS for each bucket.
	PathStyle bool
	Bucket    string
	// Prefix, when set, is put before every key ("svc" stores ws/… as svc/ws/…).
	Prefix string
	// Transport carries the store's requests; nil gives the store one of
	// its own (minio's default, whose idle connections close after a
	// minute). Tests pass theirs, to close its connections when they end.
	Transport http.RoundTripper
}

// S3Store keeps objects in a bucket. A Put of a known size up to s3PartSize
// is one PUT request; larger or unknown sizes are a multipart upload of
// s3PartSize parts, one part in memory at a time, which is aborted when the
// Put fails, so nothing is left behind either way. S3 makes an object visible
// only when its PUT or its multipart upload completes.
type S3Store struct {
	client *minio.Client
	core   minio.Core
	bucket string
	prefix string
	desc   string
}

const (
	// s3PartSize is the part size of multipart uploads, and so the memory
	// one upload holds. 10,000 parts of it make 80 GiB, S3's part count
	// limit, far above any asset limit.
	s3PartSize = 8 << 20
	// s3AbortGrace bounds the clean-up of a Put whose caller went away: the
	// abort of its multipart upload still gets this long.
	s3AbortGrace = 30 * time.Second
	// s3MaxRetries keeps a lost service from holding requests for long.
	s3MaxRetries = 2
)

// OpenS3 connects to the bucket of cfg. It makes no request: Check does.
func OpenS3(cfg S3Config) (*S3Store, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("object store: s3 needs a bucket")
	}
	lookup := minio.BucketLookupDNS
	if cfg.PathStyle {
		lookup = minio.BucketLookupPath
	}
	transport := cfg.Transport
	if transport == nil {
		t, err := minio.DefaultTransport(cfg.UseTLS)
		if err != nil {
			return nil, fmt.Errorf("object store: s3 transport: %w", err)
		}
		transport = t
	}
	client, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, ""),
		Secure:       cfg.UseTLS,
		Region:       cfg.Region,
		BucketLookup: lookup,
		MaxRetries:   s3MaxRetries,
		Transport:    resendUnparsed{next: transport},
	})
	if err != nil {
		return nil, fmt.Errorf("object store: s3 endpoint %q: %w", cfg.Endpoint, err)
	}
	prefix := strings.Trim(cfg.Prefix, "/")
	scheme := "http"
	if cfg.UseTLS {
		scheme = "https"
	}
	desc := "s3://" + cfg.Bucket
	if prefix != "" {
		desc += "/" + prefix
	}
	desc += " at " + scheme + "://" + cfg.Endpoint
	return &S3Store{client: client, core: minio.Core{Client: client}, bucket: cfg.Bucket, prefix: prefix, desc: desc}, nil
}

// s3UnparsedRetries is how many more times resendUnparsed sends a request.
const s3UnparsedRetries = 2

// resendUnparsed sends a GET, HEAD or DELETE without a body again, up to
// s3UnparsedRetries times, while the server answers it 400 and closes the
// connection ("Connection: close"): the answer of a server that could not
// parse the request's head. The request is well formed, so the cause is the
// connection it travelled on: an S3 server built on fasthttp, such as
// versitygw, can leave part of an earlier request unread on a kept-alive
// connection and read it as the start of the next one. fasthttp answers a
// request it cannot parse on a connection it then closes (versitygw says 400
// BadRequest, "An error occurred when parsing the HTTP request"), while
// versitygw's other 400 answers keep the connection open. The status and the
// closing are the signature for every method: a HEAD's answer has no body to
// read, and versitygw sets x-amz-request-id on this answer as on any other.
// The request is idempotent with nothing to replay: the refused answer's body
// is drained and closed, its connection is not reused, and the request goes
// out on another.
type resendUnparsed struct{ next http.RoundTripper }

func (t resendUnparsed) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodDelete:
	default:
		return resp, err
	}
	if req.Body != nil && req.Body != http.NoBody {
		return resp, err
	}
	for try := 0; try < s3UnparsedRetries && err == nil && resp.StatusCode == http.StatusBadRequest && resp.Close; try++ {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		resp, err = t.next.RoundTrip(req)
	}
	return resp, err
}

// Describe implements Store.
func (s *S3Store) Describe() string { return s.desc }

func (s *S3Store) name(key string) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	if s.prefix == "" {
		return key, nil
	}
	return s.prefix + "/" + key, nil
}

// Put implements Store.
func (s *S3Store) Put(ctx context.Context, key string, r io.Reader, size int64, opts PutOptions) (Info, error) {
	name, err := s.name(key)
	if err != nil {
		return Info{}, err
	}
	if opts.Limit > 0 && size > opts.Limit {
		return Info{}, ErrTooLarge
	}
	// The upload runs on a context the caller's cancellation does not end at
	// once: the reader stops (contextReader), and the failed upload is
	// aborted under s3AbortGrace instead of being left as stored parts.
	upCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(s3AbortGrace, cancel)
		context.AfterFunc(upCtx, func() { t.Stop() })
	})
	defer stop()

	g := newGuardedReader(contextReader{ctx: ctx, r: r}, size, opts.Limit)
	contentType := opts.ContentType
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	info, err := s.client.PutObject(upCtx, s.bucket, name, g, size, minio.PutObjectOptions{
		ContentType: contentType,
		PartSize:    s3PartSize,
	})
	if ferr := g.failed(); ferr != nil {
		// The reader's failure is the cause, whatever the client made of it.
		return Info{}, fmt.Errorf("put %s: %w", key, ferr)
	}
	if err != nil {
		return Info{}, fmt.Errorf("put %s: %w", key, err)
	}
	if size >= 0 && info.Size != size {
		return Info{}, fmt.Errorf("put %s: %w", key, ErrSizeMismatch)
	}
	return Info{Key: key, Size: info.Size, Modified: info.LastModified.UTC()}, nil
}

// Get implements Store.
func (s *S3Store) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	name, err := s.name(key)
	if err != nil {
		return nil, err
	}
	if err := checkRange(offset, length); err != nil {
		return nil, err
	}
	if length == 0 {
		info, err := s.Stat(ctx, key)
		if err != nil {
			return nil, err
		}
		if offset > 0 && offset >= info.Size {
			return nil, fmt.Errorf("get %s: offset %d of %d bytes: %w", key, offset, info.Size, ErrInvalidRange)
		}
		return io.NopCloser(strings.NewReader("")), nil
	}
	var opts minio.GetObjectOptions
	switch {
	case length > 0:
		err = opts.SetRange(offset, offset+length-1)
	case offset > 0:
		err = opts.SetRange(offset, 0)
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, ErrInvalidRange)
	}
	// Core's GetObject sends the request now, so a missing object is an
	// error here rather than at the first Read.
	body, _, _, err := s.core.GetObject(ctx, s.bucket, name, opts)
	if err != nil {
		return nil, s.translate("get", key, err)
	}
	return body, nil
}

// Stat implements Store.
func (s *S3Store) Stat(ctx context.Context, key string) (Info, error) {
	name, err := s.name(key)
	if err != nil {
		return Info{}, err
	}
	oi, err := s.client.StatObject(ctx, s.bucket, name, minio.StatObjectOptions{})
	if err != nil {
		return Info{}, s.translate("stat", key, err)
	}
	return Info{Key: key, Size: oi.Size, Modified: oi.LastModified.UTC()}, nil
}

// Delete implements Store.
func (s *S3Store) Delete(ctx context.Context, key string) error {
	name, err := s.name(key)
	if err != nil {
		return err
	}
	if err := s.client.RemoveObject(ctx, s.bucket, name, minio.RemoveObjectOptions{}); err != nil {
		if errors.Is(s.translate("delete", key, err), ErrNotFound) {
			return nil
		}
		return s.translate("delete", key, err)
	}
	return nil
}

// Check implements Store: the bucket exists and the credentials reach it.
func (s *S3Store) Check(ctx context.Context) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return fmt.Errorf("object store %s: %w", s.desc, err)
	}
	if !ok {
		return fmt.Errorf("object store %s: the bucket does not exist; create it first", s.desc)
	}
	return nil
}

// translate maps the S3 answers the store promises to its errors.
func (s *S3Store) translate(op, key string, err error) error {
	resp := minio.ToErrorResponse(err)
	switch {
	case resp.Code == minio.NoSuchKey || (resp.StatusCode == http.StatusNotFound && resp.Code != minio.NoSuchBucket):
		return fmt.Errorf("%s %s: %w", op, key, ErrNotFound)
	case resp.Code == "InvalidRange" || resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		return fmt.Errorf("%s %s: %w", op, key, ErrInvalidRange)
	}
	return fmt.Errorf("%s %s: %w", op, key, err)
}
