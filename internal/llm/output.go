package llm

import (
	"fmt"
	"strings"
)

// The bounds of one answer when a request sets none.
const (
	// DefaultMaxOutputBytes bounds an answer's text, reasoning and tool calls
	// together.
	DefaultMaxOutputBytes = 4 << 20
	// DefaultMaxToolArgumentBytes bounds one tool call's arguments.
	DefaultMaxToolArgumentBytes = 1 << 20
)

// BytesPerToken is what one output token may carry, on average over an
// answer, before a request's MaxOutputTokens (or the settings'
// max_output_tokens) bounds the answer's bytes: far more than any
// tokenizer's tokens decode to, so only a vendor that ignores the token
// bound reaches it.
const BytesPerToken = 64

// minTokenBound is the least byte bound MaxOutputTokens gives, so that
// signatures and short answers never trip a tiny token bound.
const minTokenBound = 64 << 10

// entryBytes is what each tool call or reasoning block counts besides its
// text: a stream of empty calls grows the answer too.
const entryBytes = 64

// eventSlack is what one event of the stream may carry besides the answer's
// bytes (its JSON envelope, escapes).
const eventSlack = 64 << 10

// Bound names the bound an answer reached.
type Bound string

// The bounds of an answer.
const (
	// BoundAnswer is Request.MaxOutputBytes: everything the answer carries.
	BoundAnswer Bound = "answer"
	// BoundToolArguments is Request.MaxToolArgumentBytes: one call's arguments.
	BoundToolArguments Bound = "tool_arguments"
	// BoundTokens is the effective max output tokens times BytesPerToken.
	BoundTokens Bound = "max_output_tokens"
	// BoundEvent is one line or event of the vendor's stream: twice
	// MaxOutputBytes and some slack.
	BoundEvent Bound = "event"
)

// OutputLimitError ends a call whose answer outgrew one of its bounds: the
// adapter stopped reading there and closed the stream, and nothing past the
// bound reached the caller's event function. It is never retried: the same
// request would be answered the same way.
type OutputLimitError struct {
	API   string
	Bound Bound
	// Limit is the bound in bytes.
	Limit int64
	// MaxTokens is the token bound BoundTokens derives from.
	MaxTokens int
}

func (e *OutputLimitError) Error() string {
	switch e.Bound {
	case BoundToolArguments:
		return fmt.Sprintf("llm: %s: a tool call's arguments exceeded %d bytes; the stream was stopped there", e.API, e.Limit)
	case BoundTokens:
		return fmt.Sprintf("llm: %s: the answer exceeded %d bytes, more than %d output tokens can carry; the stream was stopped there", e.API, e.Limit, e.MaxTokens)
	case BoundEvent:
		return fmt.Sprintf("llm: %s: one event of the stream exceeded %d bytes; the stream was stopped there", e.API, e.Limit)
	}
	return fmt.Sprintf("llm: %s: the answer exceeded %d bytes; the stream was stopped there", e.API, e.Limit)
}

// outputLimits are the bounds of one answer.
type outputLimits struct {
	answer    int64
	bound     Bound // of answer: BoundAnswer or BoundTokens
	maxTokens int
	toolArgs  int64
	event     int
}

// outputLimits answers the request's bounds: MaxOutputBytes, lowered to what
// the effective max output tokens allow when that is less.
func (r Request) outputLimits() outputLimits {
	l := outputLimits{answer: int64(r.MaxOutputBytes), bound: BoundAnswer, toolArgs: int64(r.MaxToolArgumentBytes)}
	if l.answer <= 0 {
		l.answer = DefaultMaxOutputBytes
	}
	if l.toolArgs <= 0 {
		l.toolArgs = DefaultMaxToolArgumentBytes
	}
	l.event = int(min(2*l.answer+eventSlack, 1<<30))
	if n := r.effective().maxTokens(); n > 0 {
		if b := max(int64(n)*BytesPerToken, minTokenBound); b < l.answer {
			l.answer, l.bound, l.maxTokens = b, BoundTokens, n
		}
	}
	return l
}

// Kinds of events that stay inside the package: the bytes an assembly keeps
// without streaming them (reasoning, signatures), counted against the
// answer's bound and never passed to the caller.
const (
	// eventKeptEntry is a new reasoning block; Text is what it starts with.
	eventKeptEntry EventKind = -1 - iota
	// eventKeptDelta is more of a reasoning block.
	eventKeptDelta
)

// budget counts what one answer carries as its assembly emits it.
type budget struct {
	api  string
	lim  outputLimits
	used int64
	args map[int]int64 // by ToolIndex
}

func newBudget(api string, lim outputLimits) *budget {
	return &budget{api: api, lim: lim, args: map[int]int64{}}
}

// count adds e to the answer, or answers the bound it would exceed.
func (b *budget) count(e Event) error {
	switch e.Kind {
	case EventTextDelta, eventKeptDelta:
		return b.add(len(e.Text))
	case eventKeptEntry:
		return b.add(entryBytes + len(e.Text))
	case EventToolCallStart:
		return b.add(entryBytes + len(e.ToolCall.ID) + len(e.ToolCall.Name))
	case EventToolCallDelta:
		b.args[e.ToolIndex] += int64(len(e.Text))
		if b.args[e.ToolIndex] > b.lim.toolArgs {
			return b.toolArgs()
		}
		return b.add(len(e.Text))
	case EventToolCallDone:
		// The complete arguments may replace the pieces (responses), or come
		// whole (generateContent): bounded again.
		if int64(len(e.ToolCall.Arguments)) > b.lim.toolArgs {
			return b.toolArgs()
		}
		return b.add(len(e.ToolCall.Signature))
	}
	return nil
}

func (b *budget) add(n int) error {
	b.used += int64(n)
	if b.used > b.lim.answer {
		return &OutputLimitError{API: b.api, Bound: b.lim.bound, Limit: b.lim.answer, MaxTokens: b.lim.maxTokens}
	}
	return nil
}

func (b *budget) toolArgs() error {
	return &OutputLimitError{API: b.api, Bound: BoundToolArguments, Limit: b.lim.toolArgs}
}

// pieces assembles texts that arrive piece by piece (tool call arguments,
// reasoning) in linear time: one builder per index.
type pieces []*strings.Builder

// add appends s to piece i, making the pieces up to i.
func (p *pieces) add(i int, s string) {
	for len(*p) <= i {
		*p = append(*p, &strings.Builder{})
	}
	(*p)[i].WriteString(s)
}

// text answers piece i ("" when none was added).
func (p pieces) text(i int) string {
	if i >= len(p) {
		return ""
	}
	return p[i].String()
}

// set replaces piece i with s.
func (p *pieces) set(i int, s string) {
	for len(*p) <= i {
		*p = append(*p, &strings.Builder{})
	}
	(*p)[i].Reset()
	(*p)[i].WriteString(s)
}
