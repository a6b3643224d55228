package agentloop

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/llm"
)

// TestModelFailureText: a run's tenant reads the vendor's own error and a
// cut stream as they are, but not the text of svc's failure to read an
// answer, which names its internals; that is logged (Cause) instead.
func TestModelFailureText(t *testing.T) {
	var syntax *json.SyntaxError
	decodeErr := fmt.Errorf("decoding a chat completion chunk: %w", json.Unmarshal([]byte("{x"), &syntax))
	for _, tc := range []struct {
		name      string
		err       error
		want      string
		wantCause bool
	}{
		{name: "vendor error", err: fmt.Errorf("stream: %w", &llm.Error{API: llm.APIChatCompletions, StatusCode: 401, Message: "bad key"}),
			want: "llm: chat_completions: HTTP 401: bad key"},
		{name: "cut stream", err: llm.ErrStreamCut, want: llm.ErrStreamCut.Error()},
		{name: "undecodable answer", err: decodeErr,
			want: "the model's answer could not be read (the cause is logged with the run's id)", wantCause: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := modelFailure(tc.err)
			require.Equal(t, CodeModel, f.Code)
			require.Equal(t, tc.want, f.Message)
			if tc.wantCause {
				require.ErrorIs(t, f.Cause, tc.err)
				require.NotContains(t, f.Message, "invalid character")
			} else {
				require.NoError(t, f.Cause)
			}
		})
	}
}
