// Package contextfit fits a conversation into a model's context window
// before each model call (docs/decisions/0051-context-fitting.md). The
// system prompt, the run's input (the latest user message) and the
// current step's tool calls and results always stay; older turns are
// compacted: dropped (Truncate) or replaced by a summary the model writes
// (Summarize), which later steps and later runs of the thread reuse. A
// tool call and its results are never split. The conversation itself is
// never changed: Fit answers what to send.
package contextfit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/svcdev/svc/internal/llm"
)

// Strategy is how older turns are compacted.
type Strategy string

// The strategies.
const (
	Summarize Strategy = "summarize"
	Truncate  Strategy = "truncate"
)

// DefaultToolResultShare is the share of the window one tool result may
// take when sent (limits.tool_result_window_percent).
const DefaultToolResultShare = 0.25

// Policy is how a run's conversation is fitted.
type Policy struct {
	// Window is the model's context window in tokens; 0 fits nothing.
	Window int
	// Reserve is the tokens kept free for the answer (the model's
	// max_output_tokens).
	Reserve  int
	Strategy Strategy
	// ToolResultShare is the share of the window one tool result may take
	// (0: DefaultToolResultShare); a longer one is shortened with a marker.
	ToolResultShare float64
}

// budget is the tokens the request may take.
func (p Policy) budget() int {
	b := p.Window - p.Reserve
	if b < p.Window/4 {
		b = p.Window / 4
	}
	return b
}

// maxResult is the tokens one tool result may take.
func (p Policy) maxResult() int {
	s := p.ToolResultShare
	if s <= 0 || s > 1 {
		s = DefaultToolResultShare
	}
	return max(int(float64(p.Window)*s), 64)
}

// Summary replaces the messages [0, Through) of a thread's conversation
// but Keep (-1: none), which is sent after it: the run's input when the
// summary was written. Positions are the thread's (position = index + 1),
// which never change, so a later run of the thread reuses it.
type Summary struct {
	Text    string `json:"text"`
	Through int    `json:"through"`
	Keep    int    `json:"keep"`
}

// usable answers s when it fits msgs.
func (s *Summary) usable(msgs []llm.Message) *Summary {
	if s == nil || s.Text == "" || s.Through <= 0 || s.Through > len(msgs) || s.Keep >= s.Through {
		return nil
	}
	return s
}

// section is the summary as the system prompt carries it.
func (s *Summary) section() string {
	return "## Summary of the earlier conversation\n" +
		fmt.Sprintf("The first %d messages of this conversation were replaced by this summary to fit the model's context window:\n\n", s.Through) +
		s.Text
}

// Compaction is a new summary Fit wrote: what it replaced and the
// estimates around it (the context.compacted event).
type Compaction struct {
	Strategy Strategy
	Summary  string
	// FromPosition and ThroughPosition are the thread positions of the
	// replaced messages (KeptPosition, when set, stays sent in between).
	FromPosition    int
	ThroughPosition int
	KeptPosition    *int
	// Replaced is how many messages the summary took over; Summarized how
	// many of them the summarizing call read (the rest were too old to fit
	// in it beside the earlier summary, and are dropped).
	Replaced   int
	Summarized int
	// TokensBefore and TokensAfter estimate the request before and after
	// (calibrated); SummaryTokens the summary.
	TokensBefore  int
	TokensAfter   int
	SummaryTokens int
}

// Input is one model call's conversation.
type Input struct {
	System   string
	Tools    []llm.Tool
	Messages []llm.Message
	// Summary is the summary in force, if any.
	Summary     *Summary
	Calibration *Calibration
	// Force compacts even when the estimate fits: the vendor refused the
	// last request as longer than the window.
	Force bool
}

// Result is what to send.
type Result struct {
	System   string
	Messages []llm.Message
	// Estimate is the uncalibrated estimate of what is sent, for the
	// next calibration; 0 when nothing was fitted.
	Estimate int
	// Summary is the summary in force after the call; Compaction is set
	// when Fit wrote it.
	Summary    *Summary
	Compaction *Compaction
}

// Summarizer makes the summarizing model call: the request has its
// system, messages and output bound; the caller adds the model's name and
// its other settings.
type Summarizer func(ctx context.Context, req llm.Request) (llm.Response, error)

// Instruction is the summarizing call's system prompt.
const Instruction = "You compact a conversation between a user and an AI agent so the agent can go on with it. " +
	"Write a concise summary of the conversation below (and of the earlier summary, when there is one): " +
	"the user's goals and requests, the facts, names, numbers and decisions established, what tools were called and what they found, " +
	"and what is still open. Write it as notes in the conversation's language; do not address the user."

// ShortenedMarker ends a tool result shortened to fit the window.
const ShortenedMarker = "\n\n[svc: this tool result was shortened from %d to %d bytes to fit the model's context window]"

// Fit answers what to send for in under p. When p has no window it sends
// the messages as they are, after the summary in force, without a pass
// over them; when the estimate of in fits (and in.Force is not set), it
// costs one pass over the messages sent.
func Fit(ctx context.Context, p Policy, in Input, summarize Summarizer) (Result, error) {
	if p.Window <= 0 {
		// Without a window nothing is estimated, but a summary the thread
		// has (written after a vendor's refusal) still stands in for the
		// messages it replaces.
		if s := in.Summary.usable(in.Messages); s != nil && p.Strategy != Truncate {
			f := &fitter{p: p, in: in, msgs: in.Messages, factor: 1}
			return f.result(s, s.Keep, s.Through, 0), nil
		}
		return Result{System: in.System, Messages: in.Messages}, nil
	}
	f := &fitter{p: p, in: in, msgs: in.Messages, factor: in.Calibration.Factor(), maxResult: p.maxResult()}
	if p.Strategy != Truncate {
		f.summary = in.Summary.usable(in.Messages)
	}
	start, keep := 0, -1
	if f.summary != nil {
		start, keep = f.summary.Through, f.summary.Keep
	}
	fixed := RequestOverhead + TextTokens(in.System) + ToolsTokens(in.Tools)
	total := fixed + f.summaryTokens(f.summary)
	if keep >= 0 {
		total += f.weight(keep)
	}
	for i := start; i < len(f.msgs); i++ {
		total += f.weight(i)
	}
	if !in.Force && f.cal(total) <= p.budget() {
		return f.result(f.summary, keep, start, total), nil
	}
	return f.compact(ctx, fixed, total, start, keep, summarize)
}

type fitter struct {
	p         Policy
	in        Input
	msgs      []llm.Message
	factor    float64
	maxResult int
	summary   *Summary
	shortened bool
}

// cal is an estimate calibrated.
func (f *fitter) cal(n int) int { return int(float64(n)*f.factor + 0.5) }

// weight is message i's estimate as sent (a long tool result shortened).
func (f *fitter) weight(i int) int {
	m := &f.msgs[i]
	w := MessageTokens(m)
	if m.Role == llm.RoleTool && f.cal(w) > f.maxResult {
		f.shortened = true
		return f.resultTokens() + MessageOverhead + TextTokens(ShortenedMarker) + 4
	}
	return w
}

// resultTokens is the uncalibrated tokens a shortened tool result keeps.
func (f *fitter) resultTokens() int { return max(int(float64(f.maxResult)/f.factor), 16) }

func (f *fitter) summaryTokens(s *Summary) int {
	if s == nil {
		return 0
	}
	return TextTokens(s.section()) + 1
}

// result sends the summary s, message keep (-1: none) and the messages
// from start on.
func (f *fitter) result(s *Summary, keep, start, total int) Result {
	r := Result{System: f.in.System, Estimate: total, Summary: s}
	if s != nil {
		if r.System != "" {
			r.System += "\n\n"
		}
		r.System += s.section()
	}
	if start == 0 && keep < 0 && !f.shortened {
		r.Messages = f.msgs
		return r
	}
	out := make([]llm.Message, 0, len(f.msgs)-start+1)
	if keep >= 0 {
		out = append(out, f.sent(keep))
	}
	for i := start; i < len(f.msgs); i++ {
		out = append(out, f.sent(i))
	}
	r.Messages = out
	return r
}

// sent is message i as sent: a tool result over its share shortened.
func (f *fitter) sent(i int) llm.Message {
	m := f.msgs[i]
	if m.Role != llm.RoleTool || !f.shortened || f.cal(MessageTokens(&m)) <= f.maxResult {
		return m
	}
	m.Text = shorten(m.Text, f.resultTokens()*BytesPerToken)
	return m
}

// shorten cuts s to about n bytes (on a rune boundary) and says so.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf(ShortenedMarker, len(s), cut)
}

// unitEnd is the end of the turn starting at i: an assistant message with
// the tool results after it, or one message.
func (f *fitter) unitEnd(i int) int {
	j := i + 1
	if f.msgs[i].Role == llm.RoleAssistant {
		for j < len(f.msgs) && f.msgs[j].Role == llm.RoleTool {
			j++
		}
	}
	return j
}

// compact drops the oldest turns after start until the rest fits, and
// replaces them by a summary (Summarize) or nothing (Truncate).
func (f *fitter) compact(ctx context.Context, fixed, total, start, keep int, summarize Summarizer) (Result, error) {
	msgs := f.msgs
	input := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleUser {
			input = i
			break
		}
	}
	// The current step: the last assistant message and its tool results,
	// when they follow the input.
	protect := len(msgs)
	if n := len(msgs); n > 0 && msgs[n-1].Role == llm.RoleTool {
		j := n - 1
		for j >= 0 && msgs[j].Role == llm.RoleTool {
			j--
		}
		if j > input {
			protect = j
		}
	}
	budget := f.p.budget()
	target := budget
	summarizing := f.p.Strategy != Truncate && summarize != nil
	summaryOut := 0
	if summarizing {
		// Compacting to half the budget leaves room for the steps and runs
		// that follow before the next summary is needed.
		summaryOut = min(max(budget/8, 64), 2048)
		target = budget/2 - summaryOut
	} else if f.in.Force {
		target = budget / 2
	}
	if f.in.Force {
		// The vendor refused what the estimate said fits: send at most
		// half of it.
		target = min(target, f.cal(total)/2)
	}
	cur := total - f.summaryTokens(f.summary)
	var replaced []int
	if keep >= 0 && keep != input {
		cur -= f.weight(keep)
		replaced = append(replaced, keep)
	}
	cut := start
	for i := start; i < protect && f.cal(cur) > target; {
		end := f.unitEnd(i)
		if i == input {
			i = end
			continue
		}
		for j := i; j < end; j++ {
			cur -= f.weight(j)
			replaced = append(replaced, j)
		}
		cut, i = end, end
	}
	// A conversation sent starts with the user: a cut before the input
	// moves on to the next user message.
	for cut < input && cut < protect && msgs[cut].Role != llm.RoleUser {
		end := f.unitEnd(cut)
		for j := cut; j < end; j++ {
			cur -= f.weight(j)
			replaced = append(replaced, j)
		}
		cut = end
	}
	newKeep := -1
	if input >= 0 && input < cut {
		newKeep = input
	}
	if len(replaced) == 0 {
		return f.result(f.summary, keep, start, total), nil
	}
	if !summarizing {
		return f.result(nil, newKeep, cut, cur), nil
	}
	text, read, err := f.summarize(ctx, replaced, summaryOut, summarize)
	if err != nil {
		return Result{}, err
	}
	s := &Summary{Text: text, Through: cut, Keep: newKeep}
	after := cur + f.summaryTokens(s)
	c := &Compaction{Strategy: Summarize, Summary: text, FromPosition: replaced[0] + 1, ThroughPosition: cut,
		Replaced: len(replaced), Summarized: read, TokensBefore: f.cal(total), TokensAfter: f.cal(after),
		SummaryTokens: f.cal(TextTokens(text))}
	if f.summary != nil {
		c.FromPosition = 1
	}
	if newKeep >= 0 {
		k := newKeep + 1
		c.KeptPosition = &k
	}
	r := f.result(s, newKeep, cut, after)
	r.Compaction = c
	return r, nil
}

// summarize asks the model for a summary of the earlier summary and the
// messages replaced (indexes, oldest first): as many of the newest as fit
// in one request. It answers the summary and how many messages it read. A
// refusal as too long is tried once more with half as much.
func (f *fitter) summarize(ctx context.Context, replaced []int, out int, summarize Summarizer) (string, int, error) {
	room := f.p.Window - out - RequestOverhead - TextTokens(Instruction) - 2*MessageOverhead
	for try := 0; ; try++ {
		prompt, read := f.transcript(replaced, room)
		resp, err := summarize(ctx, llm.Request{System: Instruction, MaxOutputTokens: out,
			Messages: []llm.Message{{Role: llm.RoleUser, Text: prompt}}})
		var cl *llm.ContextLengthError
		if err != nil && try == 0 && errors.As(err, &cl) && ctx.Err() == nil {
			room /= 2
			continue
		}
		if err != nil {
			return "", 0, fmt.Errorf("summarize the earlier conversation: %w", err)
		}
		text := strings.TrimSpace(resp.Message.Text)
		if text == "" {
			return "", 0, errors.New("summarize the earlier conversation: the model answered an empty summary")
		}
		return text, read, nil
	}
}

// transcript writes the earlier summary and the newest of the replaced
// messages that fit in room tokens, as the summarizing call reads them.
func (f *fitter) transcript(replaced []int, room int) (string, int) {
	var head string
	if f.summary != nil {
		head = "Earlier summary:\n" + f.summary.Text + "\n\n"
	}
	used := f.cal(TextTokens(head) + 8)
	lines := make([]string, 0, len(replaced))
	for k := len(replaced) - 1; k >= 0; k-- {
		line := f.line(replaced[k])
		n := f.cal(TextTokens(line) + 1)
		if used+n > room {
			break
		}
		used += n
		lines = append(lines, line)
	}
	var b strings.Builder
	b.WriteString(head)
	b.WriteString("Conversation:\n")
	for k := len(lines) - 1; k >= 0; k-- {
		b.WriteString(lines[k])
		b.WriteString("\n")
	}
	return b.String(), len(lines)
}

// line is message i in a transcript.
func (f *fitter) line(i int) string {
	m := f.sent(i)
	switch m.Role {
	case llm.RoleUser:
		return "User: " + m.Text
	case llm.RoleTool:
		return "Tool result (" + m.ToolCallID + "): " + m.Text
	}
	var b strings.Builder
	b.WriteString("Assistant: ")
	b.WriteString(m.Text)
	for _, c := range m.ToolCalls {
		fmt.Fprintf(&b, "\n  [called %s (%s) with %s]", c.Name, c.ID, c.Arguments)
	}
	return b.String()
}
