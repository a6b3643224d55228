package contextfit_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/contextfit"
	"github.com/svcdev/svc/internal/llm"
)

// BenchmarkFit1000Turns is the cost, per step, of fitting a 1,000-turn
// history when no new summary is needed: with the thread's summary in
// force (the usual step of a long thread), and with a window the whole
// history fits in (every message estimated).
func BenchmarkFit1000Turns(b *testing.B) {
	msgs := append(thread(1000, 200), llm.Message{Role: llm.RoleUser, Text: "the input"})
	tools := []llm.Tool{{Name: "lookup", Description: "Looks a word up.", Parameters: []byte(`{"type":"object"}`)}}
	cal := &contextfit.Calibration{Estimated: 1000, Reported: 1200}
	b.Run("summary", func(b *testing.B) {
		p := contextfit.Policy{Window: 16000, Reserve: 1000, Strategy: contextfit.Summarize}
		first, err := contextfit.Fit(b.Context(), p, contextfit.Input{System: "Be brief.", Tools: tools, Messages: msgs},
			func(context.Context, llm.Request) (llm.Response, error) {
				return llm.Response{Message: llm.Message{Text: "summary"}}, nil
			})
		require.NoError(b, err)
		require.NotNil(b, first.Compaction)
		in := contextfit.Input{System: "Be brief.", Tools: tools, Messages: msgs, Summary: first.Summary, Calibration: cal}
		bench(b, p, in)
	})
	b.Run("fits", func(b *testing.B) {
		p := contextfit.Policy{Window: 1_000_000, Reserve: 8000, Strategy: contextfit.Summarize}
		bench(b, p, contextfit.Input{System: "Be brief.", Tools: tools, Messages: msgs, Calibration: cal})
	})
}

func bench(b *testing.B, p contextfit.Policy, in contextfit.Input) {
	b.ReportAllocs()
	for b.Loop() {
		r, err := contextfit.Fit(b.Context(), p, in, nil)
		if err != nil || r.Compaction != nil {
			b.Fatal("a new summary was needed")
		}
	}
}
