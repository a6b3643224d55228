package llm

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// ContextLengthError is a vendor's refusal of a request longer than the
// model's context window. It is the cause of the *Error the adapter answers
// (errors.As finds it through the *Error), so a caller that can shorten the
// conversation tells it from every other refusal. Limit and Tokens are the
// window and the request's length in tokens when the vendor said them; 0
// when it did not.
type ContextLengthError struct {
	Limit  int
	Tokens int
}

func (e *ContextLengthError) Error() string {
	if e.Limit > 0 && e.Tokens > 0 {
		return fmt.Sprintf("the request's %d tokens exceed the model's context window of %d tokens", e.Tokens, e.Limit)
	}
	return "the request exceeds the model's context window"
}

// The vendors' wording of a context-length refusal, with the numbers when
// they give them: OpenAI's "This model's maximum context length is N
// tokens. However, your messages resulted in M tokens" (code
// context_length_exceeded) and Anthropic's "prompt is too long: M tokens >
// N maximum" and Gemini's "The input token count (M) exceeds the maximum
// number of tokens allowed (N)".
var (
	openAIContext    = regexp.MustCompile(`maximum context length is (\d+) tokens.*?(?:resulted in|requested) (\d+) tokens`)
	anthropicContext = regexp.MustCompile(`prompt is too long: (\d+) tokens > (\d+) maximum`)
	geminiContext    = regexp.MustCompile(`input token count \(?(\d+)\)? exceeds the maximum number of tokens allowed \(?(\d+)\)?`)
	contextWords     = []string{"maximum context length", "prompt is too long", "context window", "context length", "input is too long",
		"too many tokens", "exceeds the maximum number of tokens"}
)

// contextLength reads a refusal's type and message (the vendor's, before
// cleaning) as a context-length refusal; nil when it is not one.
func contextLength(status int, typ, msg string) *ContextLengthError {
	if status != http.StatusBadRequest && status != http.StatusRequestEntityTooLarge {
		return nil
	}
	if m := openAIContext.FindStringSubmatch(msg); m != nil {
		return &ContextLengthError{Limit: atoi(m[1]), Tokens: atoi(m[2])}
	}
	if m := anthropicContext.FindStringSubmatch(msg); m != nil {
		return &ContextLengthError{Limit: atoi(m[2]), Tokens: atoi(m[1])}
	}
	if m := geminiContext.FindStringSubmatch(msg); m != nil {
		return &ContextLengthError{Limit: atoi(m[2]), Tokens: atoi(m[1])}
	}
	if typ == "context_length_exceeded" {
		return &ContextLengthError{}
	}
	lower := strings.ToLower(msg)
	for _, w := range contextWords {
		if strings.Contains(lower, w) {
			return &ContextLengthError{}
		}
	}
	return nil
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
