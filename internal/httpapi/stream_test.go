package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apitest"
	"github.com/svcdev/svc/internal/app"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/run"
)

func init() {
	// The contract documents the stream as a string of text/event-stream.
	openapi3filter.RegisterBodyDecoder("text/event-stream", openapi3filter.PlainBodyDecoder)
}

// frame is one Server-Sent Events frame.
type frame struct {
	id, event, data, retry string
	comment                bool
}

// sse is an open stream read frame by frame.
type sse struct {
	resp   *http.Response
	frames chan frame
	cancel context.CancelFunc
}

// openStream opens a thread's stream as the admin outside the checking client
// (which reads whole bodies, and a live stream does not end). Its status,
// headers and every event frame are checked against the contract here.
func (b *runsBundle) openStream(t *testing.T, path string, header ...string) *sse {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.h.URL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+b.admin.APIKey)
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	require.Equal(t, "no-cache", resp.Header.Get("Cache-Control"))
	checkStreamResponse(t, req, resp)
	s := &sse{resp: resp, frames: make(chan frame, 1000), cancel: cancel}
	go s.read()
	return s
}

// checkStreamResponse checks status and headers against the contract.
func checkStreamResponse(t *testing.T, req *http.Request, resp *http.Response) {
	t.Helper()
	doc := apitest.Contract(t)
	router, err := gorillamux.NewRouter(doc)
	require.NoError(t, err)
	route, params, err := router.FindRoute(req)
	require.NoError(t, err)
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 resp.StatusCode, Header: resp.Header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, ExcludeResponseBody: true},
	}
	require.NoError(t, openapi3filter.ValidateResponse(context.Background(), in))
	require.NotEmpty(t, resp.Header.Get("X-Request-Id"))
}

func (s *sse) read() {
	defer close(s.frames)
	r := bufio.NewReader(s.resp.Body)
	var f frame
	seen := false
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			if seen {
				s.frames <- f
			}
			f, seen = frame{}, false
			continue
		}
		seen = true
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "":
			f.comment = true
		case "id":
			f.id = value
		case "event":
			f.event = value
		case "data":
			f.data = value
		case "retry":
			f.retry = value
		}
	}
}

// close disconnects the client.
func (s *sse) close() {
	s.cancel()
	_ = s.resp.Body.Close()
}

// next returns the next event frame (skipping comments), failing after a wait.
func (s *sse) next(t *testing.T) frame {
	t.Helper()
	for {
		select {
		case f, ok := <-s.frames:
			require.True(t, ok, "the stream ended")
			if f.comment {
				continue
			}
			return f
		case <-time.After(10 * time.Second):
			t.Fatal("no frame arrived")
		}
	}
}

// expect reads event frames with ids from..to, checks each against the
// contract's Event schema (its type's own schema, date-times in the one
// written form) and returns their decoded events.
func (s *sse) expect(t *testing.T, from, to int) []map[string]any {
	t.Helper()
	var out []map[string]any
	for want := from; want <= to; want++ {
		f := s.next(t)
		require.Equal(t, strconv.Itoa(want), f.id, "in order, without gaps or repeats")
		require.NoError(t, apitest.SchemaError(t, "Event", []byte(f.data)), f.data)
		var ev map[string]any
		require.NoError(t, json.Unmarshal([]byte(f.data), &ev))
		require.EqualValues(t, want, ev["seq"])
		require.Equal(t, f.event, ev["type"])
		out = append(out, ev)
	}
	return out
}

func TestStreamHistoryThenLiveEvents(t *testing.T) {
	t.Parallel()
	b := setupRuns(t)
	r := b.startRun(t, "hello") // event 1: run.status accepted
	thPath := "/api/v1/threads/" + r["thread_id"].(string)

	s := b.openStream(t, thPath+"/stream")
	defer s.close()
	first := s.expect(t, 1, 1)[0]
	require.Equal(t, "run.status", first["type"])
	require.Equal(t, map[string]any{"status": "accepted", "attempt": nil, "error": nil}, first["data"])

	l := b.claim(t) // 2: running
	b.delta(t, l, "hel")
	b.delta(t, l, "lo") // 3, 4
	evs := s.expect(t, 2, 4)
	require.Equal(t, map[string]any{"status": "running", "attempt": float64(1), "error": nil}, evs[0]["data"])
	require.Equal(t, map[string]any{"text": "lo"}, evs[2]["data"])
	b.answer(t, l, "hello") // 5: message.completed, 6: run.status succeeded
	evs = s.expect(t, 5, 6)
	require.Equal(t, "message.completed", evs[0]["type"])
	require.Equal(t, "succeeded", evs[1]["data"].(map[string]any)["status"])

	// Resuming: Last-Event-ID wins over ?after; both resume exactly after.
	byHeader := b.openStream(t, thPath+"/stream?after=1", "Last-Event-ID", "4")
	defer byHeader.close()
	byHeader.expect(t, 5, 6)
	byQuery := b.openStream(t, thPath+"/stream?after=2")
	defer byQuery.close()
	byQuery.expect(t, 3, 6)

	// And they go on live.
	next := b.must(t, http.StatusAccepted, http.MethodPost, thPath+"/inputs", map[string]any{"content": "more"})
	require.NotNil(t, next["run"])
	for _, st := range []*sse{s, byHeader, byQuery} {
		require.Equal(t, "accepted", st.expect(t, 7, 7)[0]["data"].(map[string]any)["status"])
	}

	out := b.must(t, http.StatusBadRequest, http.MethodGet, thPath+"/stream", nil, "Last-Event-ID", "seven")
	require.Equal(t, "invalid_argument", errorCode(t, out))
	b.must(t, http.StatusNotFound, http.MethodGet, "/api/v1/threads/th_nothing/stream", nil, "Accept", "text/event-stream")
	b.must(t, http.StatusUnauthorized, http.MethodGet, thPath+"/stream", nil, "Authorization", "Bearer svc_nope")
}

// dropping loses the publish of message.delta events whose text is "lost".
type dropping struct{ next run.Publisher }

func (d dropping) Publish(ctx context.Context, threadID string, evs []run.Event) {
	kept := evs[:0:0]
	for _, e := range evs {
		if e.Type == run.EventMessageDelta && strings.Contains(string(e.Data), `"lost"`) {
			continue
		}
		kept = append(kept, e)
	}
	d.next.Publish(ctx, threadID, kept)
}

func TestStreamFillsGapsFromPostgreSQL(t *testing.T) {
	t.Parallel()
	b := setupRunsWith(t, func(p run.Publisher) run.Publisher { return dropping{p} })
	r := b.startRun(t, "hello")
	s := b.openStream(t, "/api/v1/threads/"+r["thread_id"].(string)+"/stream")
	defer s.close()
	s.expect(t, 1, 1)
	l := b.claim(t)
	s.expect(t, 2, 2)
	b.delta(t, l, "lost")
	b.delta(t, l, "lost")
	b.delta(t, l, "found") // 5 arrives live; 3 and 4 come from PostgreSQL
	evs := s.expect(t, 3, 5)
	require.Equal(t, map[string]any{"text": "lost"}, evs[0]["data"])
	require.Equal(t, map[string]any{"text": "found"}, evs[2]["data"])
}

// With Redis unreachable the stream sends the history, a retry hint and ends;
// the client reconnects later and misses nothing.
func TestStreamWithoutRedisSendsHistoryAndEnds(t *testing.T) {
	t.Parallel()
	proxy, url := apitest.ProxyURL(t, apitest.RedisURL(t))
	h := apitest.Start(t, apitest.Options{Role: app.RoleControl, Configure: func(c *config.Config) { c.Redis.URL = url }})
	b := runsOn(t, h)
	r := b.startRun(t, "hello")
	l := b.claim(t)
	b.delta(t, l, "one")
	thPath := "/api/v1/threads/" + r["thread_id"].(string)

	proxy.Cut()
	// Through the checking client: the stream ends, so its whole body is checked.
	status, body := streamBody(t, b, thPath+"/stream?after=1")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "id: 2\nevent: run.status\n", body[:len("id: 2\nevent: run.status\n")])
	require.Contains(t, body, "id: 3\nevent: message.delta\n")
	require.True(t, strings.HasSuffix(body, "retry: 5000\n\n"), body)
	b.delta(t, l, "two") // runs go on without Redis

	proxy.Restore()
	s := b.openStream(t, thPath+"/stream", "Last-Event-ID", "3")
	defer s.close()
	require.Equal(t, map[string]any{"text": "two"}, s.expect(t, 4, 4)[0]["data"])
	b.delta(t, l, "three")
	s.expect(t, 5, 5)
}

// streamBody reads a stream that ends through the checking client.
func streamBody(t *testing.T, b *runsBundle, path string) (int, string) {
	t.Helper()
	resp := b.h.Get(t, path, "Authorization", "Bearer "+b.admin.APIKey, "Accept", "text/event-stream")
	var sb strings.Builder
	_, err := bufio.NewReader(resp.Body).WriteTo(&sb)
	require.NoError(t, err)
	return resp.StatusCode, sb.String()
}

// runsOn builds a runs bundle on a started process.
func runsOn(t *testing.T, h *apitest.Harness) *runsBundle {
	t.Helper()
	return setupRunsOn(t, h, nil)
}

// Closing streams leaves nothing running on the server, and a stream still
// open when the process shuts down ends with a retry hint instead of holding
// the shutdown. Not parallel: it counts the test binary's goroutines.
func TestStreamDisconnectAndShutdown(t *testing.T) {
	var lingering *sse
	t.Cleanup(func() {
		// Runs after the process's shutdown (cleanups run last first).
		var got []frame
		deadline := time.After(10 * time.Second)
	read:
		for {
			select {
			case f, ok := <-lingering.frames:
				if !ok {
					break read
				}
				got = append(got, f)
			case <-deadline:
				t.Error("the open stream did not end at shutdown")
				lingering.close()
				return
			}
		}
		require.NotEmpty(t, got)
		require.Equal(t, "5000", got[len(got)-1].retry, "the open stream ended with a retry hint")
	})
	b := setupRuns(t)
	r := b.startRun(t, "hello")
	path := "/api/v1/threads/" + r["thread_id"].(string) + "/stream"

	warm := b.openStream(t, path)
	warm.expect(t, 1, 1)
	warm.close()
	http.DefaultClient.CloseIdleConnections()
	baseline := settledGoroutines()

	var streams []*sse
	for range 50 {
		s := b.openStream(t, path)
		s.expect(t, 1, 1)
		streams = append(streams, s)
	}
	require.Greater(t, runtime.NumGoroutine(), baseline+50)
	for _, s := range streams {
		s.close()
	}
	http.DefaultClient.CloseIdleConnections()
	require.Eventually(t, func() bool { return runtime.NumGoroutine() <= baseline+2 }, 10*time.Second, 50*time.Millisecond,
		"goroutines: baseline %d, now %d", baseline, runtime.NumGoroutine())

	lingering = b.openStream(t, path)
	lingering.expect(t, 1, 1)
}

// settledGoroutines waits for the goroutine count to stop falling and returns it.
func settledGoroutines() int {
	n := runtime.NumGoroutine()
	for range 20 {
		time.Sleep(100 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m >= n {
			return max(m, n)
		}
		n = m
	}
	return n
}
