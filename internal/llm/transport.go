package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/vendortext"
)

// Endpoint is where and how an adapter sends its requests.
type Endpoint struct {
	// BaseURL is the vendor's API base, such as https://api.openai.com/v1 or
	// https://api.anthropic.com; each adapter appends its path.
	BaseURL string
	// APIKey is the credential; empty sends no auth header (ollama).
	APIKey string
	// AuthHeader and AuthPrefix carry the key (AuthPrefix + APIKey); when
	// AuthHeader is empty the adapter's default is used (Authorization
	// "Bearer " for chat completions, x-api-key for messages).
	AuthHeader string
	AuthPrefix string
	// Headers are sent with every request (OpenAI-Organization, a gateway's
	// headers, Portkey's virtual key...); empty values are left out. They cannot
	// replace the auth header. Errors never show their values, as for APIKey.
	Headers map[string]string
	// HTTPClient sends the requests: the endpoint policy's guarded client, built
	// with timeout 0 since answers stream for minutes (cancel the context
	// instead). Nil uses http.DefaultClient (tests only).
	HTTPClient *http.Client
	// Retry bounds retries; the zero value is DefaultRetry.
	Retry RetryPolicy
	// IdleTimeout ends a call whose answer (headers or stream) sends nothing
	// for this long; 0 is DefaultIdleTimeout, negative waits forever. Anthropic
	// streams pings; the default leaves room for a reasoning model's silence.
	IdleTimeout time.Duration

	// hidden are further values errors must not show (Bedrock's keys).
	hidden []string
}

// secrets are the values errors must not show: the key and every extra
// header's value (Portkey's virtual key travels in one).
func (ep Endpoint) secrets() []string {
	out := append([]string{ep.APIKey}, ep.hidden...)
	for _, v := range ep.Headers {
		out = append(out, v)
	}
	return out
}

// DefaultIdleTimeout is the IdleTimeout of an Endpoint that sets none.
const DefaultIdleTimeout = 5 * time.Minute

// RetryPolicy bounds the retries of one call.
type RetryPolicy struct {
	// MaxAttempts is the number of requests, the first included.
	MaxAttempts int
	// BaseDelay is the first backoff; each retry doubles it, with full jitter
	// over the upper half, up to MaxDelay.
	BaseDelay time.Duration
	MaxDelay  time.Duration
	// MaxRetryAfter is the longest Retry-After the adapter waits; a vendor that
	// asks for longer gets the error back at once (Error.RetryAfter says how
	// long it asked for), for the engine to reschedule the step.
	MaxRetryAfter time.Duration
}

// DefaultRetry is used when an Endpoint's RetryPolicy is the zero value.
var DefaultRetry = RetryPolicy{MaxAttempts: 4, BaseDelay: 500 * time.Millisecond, MaxDelay: 20 * time.Second, MaxRetryAfter: 60 * time.Second}

func (p RetryPolicy) orDefault() RetryPolicy {
	if p == (RetryPolicy{}) {
		return DefaultRetry
	}
	p.MaxAttempts = max(p.MaxAttempts, 1)
	return p
}

// backoff is the wait before retry number n (1 for the first retry).
func (p RetryPolicy) backoff(n int) time.Duration {
	d := p.BaseDelay
	for i := 1; i < n && d < p.MaxDelay; i++ {
		d *= 2
	}
	if p.MaxDelay > 0 {
		d = min(d, p.MaxDelay)
	}
	if d <= 0 {
		return 0
	}
	half := d / 2
	return half + rand.N(half+1)
}

// Error is a failed call: an HTTP error answer, a transport failure or an error
// the vendor reported inside the stream. Its text never holds the API key nor
// more than a short, cleaned excerpt of what the vendor said.
type Error struct {
	// API is the API family ("chat_completions", "messages").
	API string
	// StatusCode is the HTTP status; 0 for transport and in-stream errors.
	StatusCode int
	// Type is the vendor's error type or code (rate_limit_error,
	// insufficient_quota...), when it gave one.
	Type string
	// Message is the cleaned, shortened explanation.
	Message string
	// Retryable says whether the same request may succeed later (429, 5xx,
	// transport failures, overload).
	Retryable bool
	// RetryAfter is the vendor's Retry-After, when it sent one.
	RetryAfter time.Duration
	// Attempts is the number of requests made.
	Attempts int
	// cause is a sentinel (ErrStreamCut, endpoint.ErrRefused) or a
	// *ContextLengthError; never a transport error, whose text can carry URLs.
	cause error
}

// Unwrap returns the sentinel the error is an instance of, if any.
func (e *Error) Unwrap() error { return e.cause }

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("llm: ")
	b.WriteString(e.API)
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.StatusCode)
	}
	if e.Type != "" {
		fmt.Fprintf(&b, " (%s)", e.Type)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " after %d attempts", e.Attempts)
	}
	return b.String()
}

// ErrStreamCut is wrapped by errors of streams that ended before the vendor's
// end marker.
var ErrStreamCut = errors.New("the stream ended before the answer was complete")

// maxMessage bounds the vendor text an Error keeps.
const maxMessage = 200

var secretLike = regexp.MustCompile(`(?i)(sk-[a-z0-9_\-]{6,}|bearer\s+[a-z0-9._\-]{6,}|[a-z0-9_\-]{32,})`)

// clean shortens a vendor message and removes the key and key-like tokens from
// it (vendors echo keys: "Incorrect API key provided: sk-...").
func clean(s string, secrets ...string) string {
	s = vendortext.Clean(s, math.MaxInt, secrets...)
	return vendortext.Clean(secretLike.ReplaceAllString(s, vendortext.Redacted), maxMessage)
}

// vendorError reads the error members vendors use:
// {"error": {"message", "type", "code"}} (OpenAI, Anthropic's
// {"type":"error","error":{...}}, Gemini's {"error":{"code","message","status"}})
// and a top-level {"message"} (Cohere, Bedrock).
func vendorError(body []byte) (typ, msg string) {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &v) != nil {
		return "", ""
	}
	if len(v.Error) == 0 || string(v.Error) == "null" {
		return "", v.Message
	}
	var e struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    any    `json:"code"`
		Status  string `json:"status"`
	}
	if json.Unmarshal(v.Error, &e) != nil {
		var s string
		if json.Unmarshal(v.Error, &s) == nil {
			return "", s
		}
		return "", ""
	}
	typ = e.Type
	if typ == "" {
		typ = e.Status
	}
	if c, ok := e.Code.(string); ok && c != "" && (typ == "" || typ == "invalid_request_error") {
		typ = c
	}
	return typ, e.Message
}

// statusError turns an HTTP error answer into an *Error.
func statusError(api string, resp *http.Response, secrets []string) *Error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	typ, msg := vendorError(body)
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	if typ == "" { // Bedrock: x-amzn-ErrorType: ThrottlingException:http://...
		typ, _, _ = strings.Cut(resp.Header.Get("X-Amzn-Errortype"), ":")
	}
	e := &Error{
		API:        api,
		StatusCode: resp.StatusCode,
		Type:       clean(typ, secrets...),
		Message:    clean(msg, secrets...),
		Retryable:  resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500,
		RetryAfter: retryAfter(resp.Header.Get("Retry-After")),
	}
	if cl := contextLength(resp.StatusCode, typ, msg); cl != nil {
		e.cause = cl
	}
	return e
}

// retryAfter reads Retry-After in seconds or as an HTTP date; 0 when absent.
func retryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// call is one adapter's HTTP call: the body to POST and how to read a 200.
type call struct {
	api        string
	url        string
	body       []byte
	headers    map[string]string // the adapter's own headers, set after Endpoint.Headers
	authHeader string
	authPrefix string
	// decode reads a streamed answer: no line or event of it may exceed
	// maxEvent bytes.
	decode func(ctx context.Context, body io.Reader, maxEvent int, emit func(Event) error) (Response, error)
	// limits bound the answer (Request.outputLimits); the zero value takes
	// the defaults.
	limits outputLimits
	// contentType is the media type of a streamed answer; empty is
	// text/event-stream.
	contentType string
	// prepare, when set, finishes each request before it is sent (signs it,
	// adds a fetched access token); an *Error it returns is the attempt's.
	prepare     func(ctx context.Context, req *http.Request) error
	endpointCfg Endpoint
	watch       func() // set by once: resets the idle timer
}

// run POSTs the call, retrying as the policy allows until an answer starts
// streaming, and decodes it. Every event is counted against the answer's
// bounds before it is passed on: the first that exceeds one ends the call
// with an *OutputLimitError, which is not retried.
func (c call) run(ctx context.Context, fn func(Event) error) (Response, error) {
	policy := c.endpointCfg.Retry.orDefault()
	if c.limits.answer == 0 {
		c.limits = Request{}.outputLimits()
	}
	delivered := false
	for attempt := 1; ; attempt++ {
		b := newBudget(c.api, c.limits)
		emit := func(e Event) error {
			if err := b.count(e); err != nil {
				return err
			}
			if e.Kind < 0 { // kept by the assembly, not streamed
				return nil
			}
			delivered = true
			if err := fn(e); err != nil {
				return &callbackError{err}
			}
			return nil
		}
		resp, err := c.once(ctx, emit)
		if err == nil {
			resp.Attempts = attempt
			return resp, nil
		}
		var cb *callbackError
		if errors.As(err, &cb) {
			return Response{}, fmt.Errorf("llm: %s: stream consumer: %w", c.api, cb.err)
		}
		var ol *OutputLimitError
		if errors.As(err, &ol) {
			return Response{}, ol
		}
		if ctx.Err() != nil {
			return Response{}, fmt.Errorf("llm: %s: %w", c.api, context.Cause(ctx))
		}
		var e *Error
		if !errors.As(err, &e) {
			return Response{}, err
		}
		e.Attempts = attempt
		if delivered || !e.Retryable || attempt >= policy.MaxAttempts {
			return Response{}, e
		}
		wait := policy.backoff(attempt)
		if e.RetryAfter > 0 {
			if e.RetryAfter > policy.MaxRetryAfter {
				return Response{}, e
			}
			wait = max(wait, e.RetryAfter)
		}
		if err := sleep(ctx, wait); err != nil {
			return Response{}, fmt.Errorf("llm: %s: waiting to retry: %w", c.api, err)
		}
	}
}

// callbackError marks an error returned by the caller's event function.
type callbackError struct{ err error }

func (e *callbackError) Error() string { return e.err.Error() }
func (e *callbackError) Unwrap() error { return e.err }

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// once makes one request and decodes its answer.
func (c call) once(ctx context.Context, emit func(Event) error) (Response, error) {
	key := c.endpointCfg.APIKey
	secrets := c.endpointCfg.secrets()
	idle := c.endpointCfg.IdleTimeout
	if idle == 0 {
		idle = DefaultIdleTimeout
	}
	reqCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if idle > 0 {
		timer := time.AfterFunc(idle, func() { cancel(errIdle) })
		defer timer.Stop()
		c.watch = func() { timer.Reset(idle) }
	}
	resp, err := c.send(reqCtx, key)
	if err != nil {
		return Response{}, c.failure(ctx, reqCtx, err, secrets, "request failed: ")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Response{}, statusError(c.api, resp, secrets)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, c.streamType()) {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		_, msg := vendorError(body)
		return Response{}, &Error{API: c.api, StatusCode: resp.StatusCode,
			Message: clean(fmt.Sprintf("expected an event stream, got %q %s", ct, msg), secrets...)}
	}
	// An error return closes the body unread: the connection is dropped
	// and the vendor's stream stops there.
	out, err := c.decode(reqCtx, &watchedReader{r: resp.Body, watch: c.watch}, c.limits.event, emit)
	if err != nil {
		var e *Error
		var cb *callbackError
		var ol *OutputLimitError
		switch {
		case errors.As(err, &cb):
			return Response{}, err
		case errors.As(err, &ol):
			ol.API = c.api
			return Response{}, ol
		case errors.As(err, &e):
			e.Message, e.Type = clean(e.Message, secrets...), clean(e.Type, secrets...)
			return Response{}, e
		default:
			return Response{}, c.failure(ctx, reqCtx, err, secrets, "")
		}
	}
	return out, nil
}

// errIdle cancels a request whose answer went silent.
var errIdle = errors.New("idle")

// watchedReader calls watch after every read that returned data.
type watchedReader struct {
	r     io.Reader
	watch func()
}

func (w *watchedReader) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if n > 0 && w.watch != nil {
		w.watch()
	}
	return n, err
}

// failure turns a transport or read error into the call's error: the caller's
// cancellation as is; otherwise an *Error, retryable unless the endpoint
// policy refused the call (run retries only while nothing was delivered).
func (c call) failure(ctx, reqCtx context.Context, err error, secrets []string, prefix string) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var own *Error
	if errors.As(err, &own) {
		return own
	}
	if errors.Is(context.Cause(reqCtx), errIdle) {
		return &Error{API: c.api, Message: "the vendor sent nothing for " + c.idle().String(), Retryable: true}
	}
	// A *url.Error's text repeats the request's URL, which can carry a key in
	// its query (Gemini) and names internal addresses: keep only its cause.
	msg := err.Error()
	if ue, ok := errors.AsType[*url.Error](err); ok {
		msg = ue.Err.Error()
	}
	e := &Error{API: c.api, Message: prefix + clean(msg, secrets...), Retryable: true}
	switch {
	case errors.Is(err, endpoint.ErrRefused):
		e.Retryable, e.cause = false, endpoint.ErrRefused
	case errors.Is(err, ErrStreamCut):
		e.cause = ErrStreamCut
	}
	return e
}

func (c call) idle() time.Duration {
	if c.endpointCfg.IdleTimeout == 0 {
		return DefaultIdleTimeout
	}
	return c.endpointCfg.IdleTimeout
}

func (c call) streamType() string {
	if c.contentType == "" {
		return "text/event-stream"
	}
	return c.contentType
}

// send POSTs the body with the call's headers.
func (c call) send(ctx context.Context, key string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(c.body))
	if err != nil {
		return nil, &Error{API: c.api, Message: "invalid endpoint URL: " + clean(err.Error(), c.endpointCfg.secrets()...)}
	}
	for k, v := range c.endpointCfg.Headers {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", c.streamType())
	if key != "" {
		req.Header.Set(c.authHeader, c.authPrefix+key)
	}
	if c.prepare != nil {
		if err := c.prepare(ctx, req); err != nil {
			return nil, err
		}
	}
	client := c.endpointCfg.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	return client.Do(req)
}

// sseEvent is one Server-Sent Events message.
type sseEvent struct {
	event string
	data  string
}

// sseReader reads Server-Sent Events (the subset vendors use: event and data
// fields, comments, LF or CRLF line ends). No line, and no event's data, may
// exceed max bytes: a vendor that sends more gets an *OutputLimitError
// (BoundEvent) before more than max bytes and one read are buffered.
type sseReader struct {
	r   *bytes.Buffer
	src io.Reader
	buf []byte
	eof bool
	max int
}

func newSSEReader(src io.Reader, maxEvent int) *sseReader {
	return &sseReader{r: &bytes.Buffer{}, src: src, buf: make([]byte, 32<<10), max: maxEvent}
}

func (s *sseReader) tooLong() error {
	return &OutputLimitError{Bound: BoundEvent, Limit: int64(s.max)}
}

// line returns the next line without its end; io.EOF at the end of input.
func (s *sseReader) line() (string, error) {
	for {
		if i := bytes.IndexByte(s.r.Bytes(), '\n'); i >= 0 {
			l := string(s.r.Next(i + 1)[:i])
			return strings.TrimSuffix(l, "\r"), nil
		}
		if s.eof {
			if s.r.Len() > 0 {
				l := s.r.String()
				s.r.Reset()
				return strings.TrimSuffix(l, "\r"), nil
			}
			return "", io.EOF
		}
		if s.r.Len() > s.max {
			return "", s.tooLong()
		}
		n, err := s.src.Read(s.buf)
		s.r.Write(s.buf[:n])
		if errors.Is(err, io.EOF) {
			s.eof = true
		} else if err != nil {
			return "", fmt.Errorf("reading the event stream: %w", err)
		}
	}
}

// next returns the next event with data; io.EOF when the input ends.
func (s *sseReader) next() (sseEvent, error) {
	var ev sseEvent
	var data []string
	size := 0
	for {
		l, err := s.line()
		if err != nil {
			// An event the input ends in the middle of is dropped (as the SSE
			// specification says): the decoder then sees a cut stream.
			return sseEvent{}, err
		}
		if l == "" {
			if len(data) > 0 {
				break
			}
			ev = sseEvent{}
			continue
		}
		if strings.HasPrefix(l, ":") {
			continue
		}
		field, value, _ := strings.Cut(l, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			ev.event = value
		case "data":
			if size += len(value) + 1; size > s.max {
				return sseEvent{}, s.tooLong()
			}
			data = append(data, value)
		}
	}
	ev.data = strings.Join(data, "\n")
	return ev, nil
}
