package llm_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/svcdev/svc/internal/llm"
)

// The bounds of the output tests: small, so that a vendor that ignores them
// is told apart from one that stopped in time by orders of magnitude.
const (
	testOutputBytes = 256 << 10
	testArgBytes    = 64 << 10
	// giveUp is where an endless stand-in stops on its own: far past every
	// bound, so a test whose adapter read on fails rather than hangs.
	giveUp = 256 << 20
)

// piece is what each endless frame carries: JSON-safe text.
var piece = strings.Repeat("x", 16<<10)

// endlessStream streams head, then frames made by more until the client
// leaves (or giveUp bytes went out), counting the bytes written in sent.
func endlessStream(sent *atomic.Int64, head []frame, more func() frame) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentTypeOf(append(head, more())))
		w.WriteHeader(http.StatusOK)
		writeFrames(w, head)
		cw := &countingWriter{ResponseWriter: w, n: sent}
		for sent.Load() < giveUp && r.Context().Err() == nil {
			if !writeFramesErr(cw, []frame{more()}) {
				return
			}
		}
	}
}

// endlessLine starts an SSE data line and never ends it.
func endlessLine(sent *atomic.Int64) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, "data: ")
		for sent.Load() < giveUp {
			n, err := fmt.Fprint(w, piece)
			sent.Add(int64(n))
			if err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}
}

// hugeEventMessage announces an AWS event stream message of 15 MiB and
// sends its bytes until the client leaves.
func hugeEventMessage(sent *atomic.Int64) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", eventStreamType)
		w.WriteHeader(http.StatusOK)
		var prelude [12]byte
		binary.BigEndian.PutUint32(prelude[0:4], 15<<20)
		binary.BigEndian.PutUint32(prelude[4:8], 0)
		binary.BigEndian.PutUint32(prelude[8:12], crc32.ChecksumIEEE(prelude[:8]))
		_, _ = w.Write(prelude[:])
		for sent.Load() < 15<<20 {
			n, err := w.Write([]byte(piece))
			sent.Add(int64(n))
			if err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingWriter) Flush() { c.ResponseWriter.(http.Flusher).Flush() }

// writeFramesErr is writeFrames that reports whether the client still reads.
func writeFramesErr(w http.ResponseWriter, frames []frame) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	before := w.(*countingWriter).n.Load()
	writeFrames(w, frames)
	return w.(*countingWriter).n.Load() > before
}

// endless is how each adapter's vendor streams an answer that never ends:
// text, and one tool call whose arguments never end.
type endless struct {
	adapter  string
	textHead []frame
	text     func() frame
	toolHead []frame
	args     func() frame
	// whole is set for vendors that stream each call whole (generateContent):
	// a call whose arguments alone exceed the bound.
	whole frame
}

var endlessAnswers = []endless{
	{
		adapter:  "chat_completions",
		textHead: []frame{ccChunk(`{"role":"assistant","content":""}`, "null")},
		text:     func() frame { return ccChunk(`{"content":"`+piece+`"}`, "null") },
		toolHead: []frame{ccChunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}`, "null")},
		args: func() frame {
			return ccChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"`+piece+`"}}]}`, "null")
		},
	},
	{
		adapter:  "messages",
		textHead: []frame{amStart(1), amFrame("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)},
		text:     func() frame { return amText(0, piece) },
		toolHead: []frame{amStart(1), amFrame("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}`)},
		args: func() frame {
			return amFrame("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"`+piece+`"}}`)
		},
	},
	{
		adapter:  "responses",
		textHead: []frame{rsCreated},
		text:     func() frame { return rsText(piece) },
		toolHead: []frame{rsCreated, rsFrame("response.output_item.added", `,"output_index":0,"item":{"id":"fc_1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_1","name":"get_weather"}`)},
		args: func() frame {
			return rsFrame("response.function_call_arguments.delta", `,"item_id":"fc_1","output_index":0,"delta":"`+piece+`"`)
		},
	},
	{
		adapter:  "cohere_chat",
		textHead: []frame{coStart, coFrame("content-start", `"index":0,"delta":{"message":{"content":{"type":"text","text":""}}}`)},
		text:     func() frame { return coText(piece) },
		toolHead: []frame{coStart, coFrame("tool-call-start", `"index":0,"delta":{"message":{"tool_calls":{"id":"c1","type":"function","function":{"name":"get_weather","arguments":""}}}}`)},
		args: func() frame {
			return coFrame("tool-call-delta", `"index":0,"delta":{"message":{"tool_calls":{"function":{"arguments":"`+piece+`"}}}}`)
		},
	},
	{
		adapter:  "converse",
		textHead: []frame{cvStart},
		text:     func() frame { return cvText(0, piece) },
		toolHead: []frame{cvStart, cvFrame("contentBlockStart", `{"contentBlockIndex":0,`+pad+`,"start":{"toolUse":{"name":"get_weather","toolUseId":"tooluse_1"}}}`)},
		args: func() frame {
			return cvFrame("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"toolUse":{"input":"`+piece+`"}},`+pad+`}`)
		},
	},
	{
		adapter: "generate_content",
		text:    func() frame { return gcChunk(`[{"text":"`+piece+`"}]`, "", "") },
		whole:   gcChunk(`[{"functionCall":{"name":"get_weather","args":{"city":"`+strings.Repeat(piece, 5)+`"}}}]`, "", ""),
	},
}

func adapterNamed(t *testing.T, name string) adapter {
	t.Helper()
	for _, a := range adapters {
		if a.name == name {
			return a
		}
	}
	t.Fatalf("no adapter %s", name)
	return adapter{}
}

// bounded is a request with the test's bounds.
var bounded = llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}, Tools: weatherTools,
	MaxOutputBytes: testOutputBytes, MaxToolArgumentBytes: testArgBytes}

// outputLimit asserts err is an *OutputLimitError of bound and that the
// vendor was asked once and stopped being read long before giveUp.
func outputLimit(t *testing.T, err error, bound llm.Bound, v *vendor, sent int64) *llm.OutputLimitError {
	t.Helper()
	var ol *llm.OutputLimitError
	if !errors.As(err, &ol) {
		t.Fatalf("error %v (%T) is no *llm.OutputLimitError", err, err)
	}
	if ol.Bound != bound {
		t.Fatalf("bound = %s, want %s (%v)", ol.Bound, bound, err)
	}
	if n := len(v.requests()); n != 1 {
		t.Fatalf("the vendor was asked %d times: an output limit is not retried", n)
	}
	// What the vendor managed to write before the adapter closed the
	// stream: the bound, one read and what the sockets buffer.
	if sent > 48<<20 {
		t.Fatalf("the vendor wrote %d bytes before the stream was closed", sent)
	}
	return ol
}

// Every adapter stops reading a vendor that streams text without end, once
// the answer reaches MaxOutputBytes, and passes on no text past it.
func TestEndlessTextStopsAtTheOutputBound(t *testing.T) {
	for _, e := range endlessAnswers {
		t.Run(e.adapter, func(t *testing.T) {
			t.Parallel()
			var sent atomic.Int64
			v := newVendor(t, endlessStream(&sent, e.textHead, e.text))
			a := adapterNamed(t, e.adapter)
			var c collect
			_, err := a.make(v.endpoint(a.base)).Stream(context.Background(), bounded, c.fn)
			ol := outputLimit(t, err, llm.BoundAnswer, v, sent.Load())
			if ol.Limit != testOutputBytes || !strings.Contains(err.Error(), "exceeded 262144 bytes") {
				t.Fatalf("error = %v", err)
			}
			if n := len(c.text()); n > testOutputBytes || n < testOutputBytes-len(piece) {
				t.Fatalf("%d bytes of text were passed on; want the bound's %d at most, and no less than one piece below", n, testOutputBytes)
			}
		})
	}
}

// Tool call arguments that never end stop at MaxToolArgumentBytes; a call
// streamed whole with arguments past it is refused too.
func TestEndlessToolArgumentsStopAtTheirBound(t *testing.T) {
	for _, e := range endlessAnswers {
		t.Run(e.adapter, func(t *testing.T) {
			t.Parallel()
			var sent atomic.Int64
			h := endlessStream(&sent, e.toolHead, e.args)
			if e.args == nil {
				h = endlessStream(&sent, nil, func() frame { return e.whole })
			}
			v := newVendor(t, h)
			a := adapterNamed(t, e.adapter)
			var c collect
			_, err := a.make(v.endpoint(a.base)).Stream(context.Background(), bounded, c.fn)
			outputLimit(t, err, llm.BoundToolArguments, v, sent.Load())
			args := 0
			for _, ev := range c.events {
				if ev.Kind == llm.EventToolCallDelta {
					args += len(ev.Text)
				}
				if ev.Kind == llm.EventToolCallDone {
					t.Fatalf("a call past its bound was completed: %d bytes", len(ev.ToolCall.Arguments))
				}
			}
			if args > testArgBytes {
				t.Fatalf("%d bytes of arguments were passed on, over the bound of %d", args, testArgBytes)
			}
		})
	}
}

// One SSE line without end (or one huge event stream message) is refused
// once it passes the event bound, not buffered whole.
func TestEndlessLineStopsAtTheEventBound(t *testing.T) {
	for _, e := range endlessAnswers {
		t.Run(e.adapter, func(t *testing.T) {
			t.Parallel()
			var sent atomic.Int64
			h := endlessLine(&sent)
			if e.adapter == "converse" {
				h = hugeEventMessage(&sent)
			}
			v := newVendor(t, h)
			a := adapterNamed(t, e.adapter)
			var c collect
			_, err := a.make(v.endpoint(a.base)).Stream(context.Background(), bounded, c.fn)
			ol := outputLimit(t, err, llm.BoundEvent, v, sent.Load())
			if want := int64(2*testOutputBytes + 64<<10); ol.Limit != want {
				t.Fatalf("event bound = %d, want %d", ol.Limit, want)
			}
			if len(c.events) != 0 {
				t.Fatalf("events were passed on: %v", c.kinds())
			}
		})
	}
}

// A model's max output tokens lower the byte bound: a vendor that ignores
// max_output_tokens is stopped at BytesPerToken times it.
func TestMaxOutputTokensLowerTheBound(t *testing.T) {
	t.Parallel()
	e := endlessAnswers[0]
	var sent atomic.Int64
	v := newVendor(t, endlessStream(&sent, e.textHead, e.text))
	a := adapterNamed(t, e.adapter)
	req := bounded
	req.MaxOutputBytes = 0 // the default, 4 MiB
	req.Settings = []byte(`{"max_output_tokens":2048}`)
	var c collect
	_, err := a.make(v.endpoint(a.base)).Stream(context.Background(), req, c.fn)
	ol := outputLimit(t, err, llm.BoundTokens, v, sent.Load())
	if ol.Limit != 2048*llm.BytesPerToken || ol.MaxTokens != 2048 || !strings.Contains(err.Error(), "2048 output tokens") {
		t.Fatalf("error = %v (%+v)", err, ol)
	}
	if n := len(c.text()); n > 2048*llm.BytesPerToken {
		t.Fatalf("%d bytes of text were passed on", n)
	}
}

// Reasoning the adapter keeps without streaming it counts too.
func TestEndlessThinkingStopsAtTheOutputBound(t *testing.T) {
	t.Parallel()
	var sent atomic.Int64
	head := []frame{amStart(1), amFrame("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`)}
	v := newVendor(t, endlessStream(&sent, head, func() frame {
		return amFrame("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"`+piece+`"}}`)
	}))
	var c collect
	_, err := llm.NewMessages(v.endpoint("")).Stream(context.Background(), bounded, c.fn)
	outputLimit(t, err, llm.BoundAnswer, v, sent.Load())
	if len(c.events) != 0 {
		t.Fatalf("reasoning was passed on: %v", c.kinds())
	}
}
