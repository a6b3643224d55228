package hosted

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// maxJSONAnswer bounds a control-plane answer read into memory.
const maxJSONAnswer = 4 << 20

// api calls one vendor's HTTP API: a base URL and the headers that
// authenticate every request.
type api struct {
	client *http.Client
	vendor string
	base   string // no trailing slash
	header http.Header
}

// call is one request.
type call struct {
	op      string
	method  string
	path    string // appended to base; already escaped
	query   url.Values
	json    any                        // request body encoded as JSON, when not nil
	body    io.Reader                  // raw request body, when json is nil
	ctype   string                     // Content-Type of body
	headers http.Header                // extra headers for this request
	out     any                        // decoded from a JSON answer, when not nil
	limit   int64                      // answer size bound; 0 is maxJSONAnswer
	raw     func(*http.Response) error // reads the answer itself instead of out
}

// do sends c and decodes the answer. A status outside 2xx is a *Error
// carrying the status only.
func (a api) do(ctx context.Context, c call) error {
	req, err := a.request(ctx, c)
	if err != nil {
		return err
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return callError(ctx, a.vendor, c.op, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return statusError(a.vendor, c.op, resp.StatusCode)
	}
	if c.raw != nil {
		if err := c.raw(resp); err != nil {
			if ctx.Err() != nil {
				return callError(ctx, a.vendor, c.op, err)
			}
			return err
		}
		return nil
	}
	if c.out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil
	}
	limit := c.limit
	if limit <= 0 {
		limit = maxJSONAnswer
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return callError(ctx, a.vendor, c.op, err)
	}
	if int64(len(data)) > limit {
		return &Error{Vendor: a.vendor, Op: c.op, Msg: fmt.Sprintf("the answer is larger than %d bytes", limit)}
	}
	if err := json.Unmarshal(data, c.out); err != nil {
		return &Error{Vendor: a.vendor, Op: c.op, Msg: "the answer is not the expected JSON"}
	}
	return nil
}

func (a api) request(ctx context.Context, c call) (*http.Request, error) {
	u := a.base + c.path
	if len(c.query) > 0 {
		u += "?" + c.query.Encode()
	}
	body, ctype := c.body, c.ctype
	if c.json != nil {
		b, err := json.Marshal(c.json)
		if err != nil {
			return nil, fmt.Errorf("envhosted: %s: %s: encode request: %w", a.vendor, c.op, err)
		}
		body, ctype = bytes.NewReader(b), "application/json"
	}
	req, err := http.NewRequestWithContext(ctx, c.method, u, body)
	if err != nil {
		// The URL holds the instance's id or host from a handle; do not echo it.
		return nil, &Error{Vendor: a.vendor, Op: c.op, Msg: "invalid request URL"}
	}
	for k, vs := range a.header {
		req.Header[k] = slices.Clone(vs)
	}
	for k, vs := range c.headers {
		req.Header[k] = slices.Clone(vs)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	req.Header.Set("User-Agent", "svc-envhosted")
	return req, nil
}

// multipartFile encodes data as a multipart/form-data body holding fields
// followed by one file part named field.
func multipartFile(fields map[string]string, field, filename string, data []byte) (io.Reader, string, error) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for k, v := range fields {
		if err := w.WriteField(k, v); err != nil {
			return nil, "", err
		}
	}
	part, err := w.CreateFormFile(field, filename)
	if err != nil {
		return nil, "", err
	}
	if _, err := part.Write(data); err != nil {
		return nil, "", err
	}
	if err := w.Close(); err != nil {
		return nil, "", err
	}
	return &buf, w.FormDataContentType(), nil
}

// baseURL checks a configured API URL and strips its trailing slash. Only
// http and https are accepted; the endpoint policy decides the rest.
func baseURL(vendor, raw, def string) (string, error) {
	if raw == "" {
		raw = def
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" {
		return "", configError(vendor, "the provider's API URL is not an http(s) URL")
	}
	return strings.TrimRight(raw, "/"), nil
}

// seg escapes one path segment (an instance id from a handle).
func seg(s string) string { return url.PathEscape(s) }
