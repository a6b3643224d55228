package contextfit

import "github.com/svcdev/svc/internal/llm"

// The local token estimate (docs/decisions/0051-context-fitting.md): a
// token is BytesPerToken bytes of text, and each message, tool call and
// tool definition costs a fixed overhead for the roles, ids and framing
// the vendor adds. No network call counts tokens: the estimate is
// calibrated by what the vendor reported for the last request instead.
const (
	BytesPerToken   = 4
	MessageOverhead = 4
	CallOverhead    = 8
	ToolOverhead    = 8
	// RequestOverhead is the framing of a request (the system message's).
	RequestOverhead = 8
)

// TextTokens is the estimate of a text's tokens.
func TextTokens(s string) int { return (len(s) + BytesPerToken - 1) / BytesPerToken }

// MessageTokens is the estimate of one message's tokens.
func MessageTokens(m *llm.Message) int {
	n := len(m.Text) + len(m.ToolCallID)
	for i := range m.ToolCalls {
		c := &m.ToolCalls[i]
		n += len(c.ID) + len(c.Name) + len(c.Arguments) + len(c.Signature) + CallOverhead*BytesPerToken
	}
	for i := range m.Reasoning {
		n += len(m.Reasoning[i].Text) + len(m.Reasoning[i].Signature)
	}
	return (n+BytesPerToken-1)/BytesPerToken + MessageOverhead
}

// ToolsTokens is the estimate of the tool definitions' tokens.
func ToolsTokens(tools []llm.Tool) int {
	n := 0
	for _, t := range tools {
		n += TextTokens(t.Name) + TextTokens(t.Description) + TextTokens(string(t.Parameters)) + ToolOverhead
	}
	return n
}

// Calibration is the last request's estimate and the input tokens the
// vendor reported for it.
type Calibration struct {
	Estimated int `json:"estimated"`
	Reported  int `json:"reported"`
}

// The bounds of a calibration factor: a vendor whose count is far off the
// estimate (cached tokens left out of its input count, say) moves the
// estimate at most this far.
const (
	minFactor = 0.5
	maxFactor = 4.0
)

// Factor is how many of the vendor's tokens one estimated token is: 1
// without a calibration.
func (c *Calibration) Factor() float64 {
	if c == nil || c.Estimated <= 0 || c.Reported <= 0 {
		return 1
	}
	return min(max(float64(c.Reported)/float64(c.Estimated), minFactor), maxFactor)
}
