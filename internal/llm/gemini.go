package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// APIGenerateContent names the Gemini generateContent family in errors.
const APIGenerateContent = "generate_content"

// GenerateContent is the Gemini generateContent adapter: the Gemini API
// (POST {base_url}/v1beta/models/{model}:streamGenerateContent?alt=sse with
// x-goog-api-key) or Vertex AI's publisher models (built by ForProvider for
// google_vertex, with an OAuth access token).
type GenerateContent struct {
	endpoint Endpoint
	// modelURL is the URL of a model's streamGenerateContent without the query.
	modelURL func(model string) string
	prepare  func(ctx context.Context, req *http.Request) error
}

// NewGenerateContent returns the Gemini API adapter for ep; BaseURL is the
// google_gemini type's base_url (https://generativelanguage.googleapis.com).
func NewGenerateContent(ep Endpoint) *GenerateContent {
	if ep.AuthHeader == "" {
		ep.AuthHeader, ep.AuthPrefix = "x-goog-api-key", ""
	}
	base := strings.TrimSuffix(ep.BaseURL, "/")
	return &GenerateContent{endpoint: ep, modelURL: func(model string) string {
		return base + "/v1beta/models/" + url.PathEscape(strings.TrimPrefix(model, "models/")) + ":streamGenerateContent"
	}}
}

var _ Model = (*GenerateContent)(nil)

// Stream implements Model.
func (g *GenerateContent) Stream(ctx context.Context, req Request, fn func(Event) error) (Response, error) {
	if err := req.Validate(); err != nil {
		return Response{}, err
	}
	b, err := generateContentBody(req)
	if err != nil {
		return Response{}, fmt.Errorf("llm: %w", err)
	}
	body, err := json.Marshal(b)
	if err != nil {
		return Response{}, fmt.Errorf("llm: encoding the generateContent request: %w", err)
	}
	turn := 0
	for _, m := range req.Messages {
		if m.Role == RoleAssistant {
			turn++
		}
	}
	return call{
		api: APIGenerateContent, url: g.modelURL(req.Model) + "?alt=sse", body: body,
		authHeader: g.endpoint.AuthHeader, authPrefix: g.endpoint.AuthPrefix,
		decode: func(ctx context.Context, r io.Reader, maxEvent int, emit func(Event) error) (Response, error) {
			return decodeGenerateContent(r, maxEvent, turn, emit)
		},
		endpointCfg: g.endpoint, prepare: g.prepare, limits: req.outputLimits(),
	}.run(ctx, fn)
}

type gcContent struct {
	Role  string   `json:"role"`
	Parts []gcPart `json:"parts"`
}

type gcPart struct {
	Text             string              `json:"text,omitempty"`
	Thought          bool                `json:"thought,omitempty"`
	FunctionCall     *gcFunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *gcFunctionResponse `json:"functionResponse,omitempty"`
	ThoughtSignature string              `json:"thoughtSignature,omitempty"`
}

type gcFunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

type gcFunctionResponse struct {
	Name     string         `json:"name"`
	Response map[string]any `json:"response"`
}

type gcFunctionDeclaration struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parametersJsonSchema"`
}

func generateContentBody(req Request) (map[string]any, error) {
	contents, err := gcContents(req.Messages)
	if err != nil {
		return nil, err
	}
	b := map[string]any{"contents": contents}
	if req.System != "" {
		b["systemInstruction"] = gcContent{Parts: []gcPart{{Text: req.System}}}
	}
	if len(req.Tools) > 0 {
		decls := make([]gcFunctionDeclaration, len(req.Tools))
		for i, t := range req.Tools {
			params := t.Parameters
			if len(params) == 0 {
				params = emptyObjectSchema
			}
			decls[i] = gcFunctionDeclaration{Name: t.Name, Description: t.Description, Parameters: params}
		}
		b["tools"] = []map[string]any{{"functionDeclarations": decls}}
	}
	s := req.effective()
	cfg := map[string]any{}
	put(cfg, "temperature", s.Temperature)
	put(cfg, "topP", s.TopP)
	put(cfg, "topK", s.TopK)
	put(cfg, "maxOutputTokens", s.MaxOutputTokens)
	put(cfg, "presencePenalty", s.PresencePenalty)
	put(cfg, "frequencyPenalty", s.FrequencyPenalty)
	put(cfg, "seed", s.Seed)
	if stop := s.stops(); len(stop) > 0 {
		cfg["stopSequences"] = stop
	}
	if s.ThinkingBudget != nil {
		cfg["thinkingConfig"] = map[string]any{"thinkingBudget": *s.ThinkingBudget}
	}
	if len(cfg) > 0 {
		b["generationConfig"] = cfg
	}
	return b, nil
}

// gcContents maps the conversation: assistant turns are role "model", tool
// results are functionResponse parts of user turns named after the call they
// answer (Gemini matches them by name and order), and consecutive turns of one
// role merge, so parallel results travel together.
func gcContents(msgs []Message) ([]gcContent, error) {
	names := map[string]string{} // tool call id -> name
	var out []gcContent
	for i, m := range msgs {
		var c gcContent
		switch m.Role {
		case RoleUser:
			c.Role = "user"
			if m.Text != "" {
				c.Parts = []gcPart{{Text: m.Text}}
			}
		case RoleAssistant:
			c.Role = "model"
			if m.Text != "" {
				c.Parts = append(c.Parts, gcPart{Text: m.Text})
			}
			for _, tc := range m.ToolCalls {
				names[tc.ID] = tc.Name
				args := json.RawMessage(tc.Arguments)
				if len(args) == 0 {
					args = json.RawMessage("{}")
				}
				c.Parts = append(c.Parts, gcPart{FunctionCall: &gcFunctionCall{Name: tc.Name, Args: args}, ThoughtSignature: tc.Signature})
			}
		case RoleTool:
			name, ok := names[m.ToolCallID]
			if !ok {
				return nil, fmt.Errorf("message %d answers tool call %q, which no earlier assistant message made", i, m.ToolCallID)
			}
			key := "output"
			if m.IsError {
				key = "error"
			}
			c.Role = "user"
			c.Parts = []gcPart{{FunctionResponse: &gcFunctionResponse{Name: name, Response: map[string]any{key: m.Text}}}}
		}
		if len(c.Parts) == 0 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Role == c.Role {
			out[n-1].Parts = append(out[n-1].Parts, c.Parts...)
			continue
		}
		out = append(out, c)
	}
	return out, nil
}

// gcChunk is one streamed GenerateContentResponse (or an error).
type gcChunk struct {
	Candidates []struct {
		Content struct {
			Parts []gcPart `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata *struct {
		PromptTokenCount     int `json:"promptTokenCount"`
		CandidatesTokenCount int `json:"candidatesTokenCount"`
		ThoughtsTokenCount   int `json:"thoughtsTokenCount"`
	} `json:"usageMetadata"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
	} `json:"error"`
}

// gcAssembly accumulates a streamed answer.
type gcAssembly struct {
	emit   func(Event) error
	turn   int
	text   strings.Builder
	calls  []ToolCall
	usage  Usage
	finish string
}

// decodeGenerateContent reads the chunks until the input ends: Gemini has no
// end marker, so a stream is complete when a chunk carried a finish reason.
func decodeGenerateContent(body io.Reader, maxEvent, turn int, emit func(Event) error) (Response, error) {
	a := &gcAssembly{emit: emit, turn: turn}
	sse := newSSEReader(body, maxEvent)
	for {
		ev, err := sse.next()
		if errors.Is(err, io.EOF) {
			return a.end()
		}
		if err != nil {
			return Response{}, err
		}
		var ch gcChunk
		if err := json.Unmarshal([]byte(ev.data), &ch); err != nil {
			return Response{}, fmt.Errorf("decoding a generateContent chunk: %w", err)
		}
		if err := a.chunk(ch); err != nil {
			return Response{}, err
		}
	}
}

func (a *gcAssembly) chunk(ch gcChunk) error {
	if ch.Error != nil {
		return &Error{API: APIGenerateContent, Type: ch.Error.Status, Message: ch.Error.Message,
			Retryable: ch.Error.Code == http.StatusTooManyRequests || ch.Error.Code >= 500}
	}
	if ch.UsageMetadata != nil {
		u := ch.UsageMetadata
		a.usage = Usage{InputTokens: u.PromptTokenCount, OutputTokens: u.CandidatesTokenCount + u.ThoughtsTokenCount}
	}
	if len(ch.Candidates) == 0 {
		if ch.PromptFeedback != nil && ch.PromptFeedback.BlockReason != "" {
			a.finish = ch.PromptFeedback.BlockReason
		}
		return nil
	}
	cand := ch.Candidates[0]
	for _, p := range cand.Content.Parts {
		switch {
		case p.FunctionCall != nil:
			if err := a.functionCall(*p.FunctionCall, p.ThoughtSignature); err != nil {
				return err
			}
		case p.Text != "" && !p.Thought: // thought summaries are not the answer
			a.text.WriteString(p.Text)
			if err := a.emit(Event{Kind: EventTextDelta, Text: p.Text}); err != nil {
				return err
			}
		}
	}
	if cand.FinishReason != "" {
		a.finish = cand.FinishReason
	}
	return nil
}

// functionCall emits a call, which Gemini streams whole. Gemini gives no call
// id (only some models do): a stable one is made from the turn and position.
func (a *gcAssembly) functionCall(fc gcFunctionCall, signature string) error {
	if fc.Name == "" {
		return &Error{API: APIGenerateContent, Message: "the model streamed a functionCall without name"}
	}
	i := len(a.calls)
	id := fc.ID
	if id == "" {
		id = "call_" + strconv.Itoa(a.turn) + "_" + strconv.Itoa(i)
	}
	args := string(fc.Args)
	if args == "" || args == "null" {
		args = "{}"
	}
	tc := ToolCall{ID: id, Name: fc.Name, Arguments: args, Signature: signature}
	a.calls = append(a.calls, tc)
	if err := a.emit(Event{Kind: EventToolCallStart, ToolIndex: i, ToolCall: ToolCall{ID: id, Name: fc.Name}}); err != nil {
		return err
	}
	if err := a.emit(Event{Kind: EventToolCallDelta, ToolIndex: i, Text: args}); err != nil {
		return err
	}
	return a.emit(Event{Kind: EventToolCallDone, ToolIndex: i, ToolCall: tc})
}

func (a *gcAssembly) end() (Response, error) {
	if a.finish == "" {
		return Response{}, fmt.Errorf("%w: no finishReason before the end", ErrStreamCut)
	}
	if err := a.emit(Event{Kind: EventUsage, Usage: a.usage}); err != nil {
		return Response{}, err
	}
	msg := Message{Role: RoleAssistant, Text: a.text.String(), ToolCalls: a.calls}
	reason := gcFinishReason(a.finish)
	if reason == FinishStop && len(a.calls) > 0 {
		reason = FinishToolCalls // Gemini says STOP after function calls
	}
	if err := a.emit(Event{Kind: EventFinish, FinishReason: reason}); err != nil {
		return Response{}, err
	}
	return Response{Message: msg, Usage: a.usage, FinishReason: reason, VendorFinishReason: a.finish}, nil
}

func gcFinishReason(r string) FinishReason {
	switch r {
	case "STOP":
		return FinishStop
	case "MAX_TOKENS":
		return FinishLength
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY":
		return FinishContentFilter
	}
	return FinishOther
}
