package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/svcdev/svc/internal/provider/probe"
)

// maxVendorAnswer bounds the part of a vendor's answer read: 20 hits of 16 KiB
// of content and 4 KiB of metadata, JSON-escaped, fit with room to spare.
const maxVendorAnswer = 4 << 20

// vendor calls a memory vendor for one record memory.
type vendor struct {
	client    *http.Client
	timeout   time.Duration
	target    probe.Target
	namespace string
}

// answer is a vendor's answer: its status and (bounded) body.
type answer struct {
	status int
	body   []byte
}

// ok reports a 2xx answer.
func (a answer) ok() bool { return a.status >= 200 && a.status < 300 }

// vendorNotFound reports a 404 that is the vendor's own JSON error (no such
// namespace or record), not an endpoint that is not the vendor.
func (a answer) vendorNotFound() bool {
	if a.status != http.StatusNotFound {
		return false
	}
	var obj map[string]json.RawMessage
	return json.Unmarshal(a.body, &obj) == nil && obj != nil
}

// do sends method path (with {namespace}) and query to the vendor, with body
// of contentType when body is not nil. A failure to reach the vendor is a
// refusal; the context's end is its error.
func (v vendor) do(ctx context.Context, method, path string, query url.Values, contentType string, body []byte) (answer, error) {
	req, err := probe.VendorRequest(ctx, v.target, method, path, map[string]string{"namespace": v.namespace})
	if err != nil {
		return answer{}, refusef("the memory provider's configuration does not make a valid address: %v", err)
	}
	if len(query) > 0 {
		req.URL.RawQuery = query.Encode()
	}
	if body != nil {
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		req.ContentLength = int64(len(body))
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := v.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return answer{}, ctx.Err()
		}
		return answer{}, refusef("%s could not be reached: %s", v.name(), probe.DescribeCallError(err, v.timeout))
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxVendorAnswer))
	if err != nil {
		if ctx.Err() != nil {
			return answer{}, ctx.Err()
		}
		return answer{}, refusef("%s's answer could not be read: %s", v.name(), probe.DescribeCallError(err, v.timeout))
	}
	return answer{status: resp.StatusCode, body: b}, nil
}

// postJSON sends v as JSON.
func (v vendor) postJSON(ctx context.Context, path string, payload any) (answer, error) {
	b, err := json.Marshal(payload)
	if err != nil {
		return answer{}, fmt.Errorf("memory tools: encode the %s request: %w", v.name(), err)
	}
	return v.do(ctx, http.MethodPost, path, nil, "application/json", b)
}

// name is the vendor's display name.
func (v vendor) name() string { return v.target.Type.DisplayName }

// failure turns a vendor's answer that is not a success into a refusal in
// fixed text; hint is added to a 400 or 422 (what the request needs that
// the vendor may have missed).
func (v vendor) failure(op string, a answer, hint string) error {
	name := v.name()
	switch s := a.status; {
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		return refusef("%s refused the memory provider's credential (HTTP %d) to %s", name, s, op)
	case s == http.StatusTooManyRequests:
		return refusef("%s is rate limiting the memory provider (HTTP 429); try again later", name)
	case s >= 500:
		return refusef("%s answered HTTP %d, a server error, to %s; try again later", name, s, op)
	case s == http.StatusNotFound:
		return refusef("the memory provider's endpoint answered HTTP 404 to %s; its address may not be %s's", op, name)
	case s >= 300 && s < 400:
		return refusef("the memory provider's endpoint redirected (HTTP %d); its address needs correcting", s)
	case (s == http.StatusBadRequest || s == http.StatusUnprocessableEntity) && hint != "":
		return refusef("%s refused the request to %s (HTTP %d); %s", name, op, s, hint)
	default:
		return refusef("%s refused the request to %s (HTTP %d)", name, op, s)
	}
}

// malformed is the refusal for a 2xx answer that is not the vendor's shape.
func (v vendor) malformed(op string) error {
	return refusef("%s answered the request to %s, but not as %s does; check the memory provider's address", v.name(), op, v.name())
}
