package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// settings are the members of Request.Settings the adapters understand: the
// union of the settings schemas of internal/provider/catalog (apis.go). Each
// adapter reads the members its API declares and ignores the others.
type settings struct {
	Temperature          *float64 `json:"temperature"`
	TopP                 *float64 `json:"top_p"`
	TopK                 *int     `json:"top_k"`
	MaxOutputTokens      *int     `json:"max_output_tokens"`
	FrequencyPenalty     *float64 `json:"frequency_penalty"`
	PresencePenalty      *float64 `json:"presence_penalty"`
	Seed                 *int64   `json:"seed"`
	Stop                 []string `json:"stop"`
	StopSequences        []string `json:"stop_sequences"`
	ReasoningEffort      string   `json:"reasoning_effort"`
	ReasoningSummary     string   `json:"reasoning_summary"`
	TextVerbosity        string   `json:"text_verbosity"`
	ParallelToolCalls    *bool    `json:"parallel_tool_calls"`
	Truncation           string   `json:"truncation"`
	ServiceTier          string   `json:"service_tier"`
	ThinkingBudgetTokens *int     `json:"thinking_budget_tokens"`
	ThinkingBudget       *int     `json:"thinking_budget"`
	Latency              string   `json:"latency"`
	SafetyMode           string   `json:"safety_mode"`
}

// parseSettings decodes a settings object; empty or null is no settings.
func parseSettings(raw json.RawMessage) (settings, error) {
	var s settings
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return s, nil
	}
	if raw[0] != '{' {
		return s, fmt.Errorf("settings are not a JSON object")
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return s, fmt.Errorf("settings: %w", err)
	}
	return s, nil
}

// effective returns the request's settings with MaxOutputTokens and
// Temperature folded in (the request's own fields win). Validate has checked
// that the settings decode.
func (r Request) effective() settings {
	s, _ := parseSettings(r.Settings)
	if r.MaxOutputTokens > 0 {
		n := r.MaxOutputTokens
		s.MaxOutputTokens = &n
	}
	if r.Temperature != nil {
		t := *r.Temperature
		s.Temperature = &t
	}
	return s
}

// maxTokens is the effective output bound, 0 when none is set.
func (s settings) maxTokens() int {
	if s.MaxOutputTokens == nil {
		return 0
	}
	return *s.MaxOutputTokens
}

// stops is the stop sequences, whichever member carried them.
func (s settings) stops() []string {
	if len(s.StopSequences) > 0 {
		return s.StopSequences
	}
	return s.Stop
}

// put sets b[name] to the value v points to, when it is set.
func put[T any](b map[string]any, name string, v *T) {
	if v != nil {
		b[name] = *v
	}
}

// putString sets b[name] to v when it is not empty.
func putString(b map[string]any, name, v string) {
	if v != "" {
		b[name] = v
	}
}
