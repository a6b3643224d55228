package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// APIConverse names the Bedrock converse family in errors.
const APIConverse = "converse"

// Converse is the Amazon Bedrock converse adapter (POST
// {endpoint}/model/{modelId}/converse-stream, SigV4-signed for the bedrock
// service, answered in the AWS event stream encoding).
type Converse struct {
	endpoint Endpoint
	region   string
	creds    awsCredentials
}

// ConverseOptions are the region and IAM keys of a Bedrock provider.
type ConverseOptions struct {
	Region          string
	AccessKeyID     string
	SecretAccessKey string
	// SessionToken is set for temporary credentials.
	SessionToken string
}

// NewConverse returns the adapter for ep; an empty BaseURL is the region's
// runtime endpoint, https://bedrock-runtime.{region}.amazonaws.com. The
// Endpoint's APIKey and auth header are not used: requests are signed.
func NewConverse(ep Endpoint, opts ConverseOptions) *Converse {
	if ep.BaseURL == "" {
		ep.BaseURL = "https://bedrock-runtime." + opts.Region + ".amazonaws.com"
	}
	ep.APIKey = ""
	ep.hidden = append(ep.hidden, opts.SecretAccessKey, opts.SessionToken, opts.AccessKeyID)
	return &Converse{endpoint: ep, region: opts.Region,
		creds: awsCredentials{AccessKeyID: opts.AccessKeyID, SecretAccessKey: opts.SecretAccessKey, SessionToken: opts.SessionToken}}
}

var _ Model = (*Converse)(nil)

// Stream implements Model.
func (c *Converse) Stream(ctx context.Context, req Request, fn func(Event) error) (Response, error) {
	if err := req.Validate(); err != nil {
		return Response{}, err
	}
	body, err := json.Marshal(converseBody(req))
	if err != nil {
		return Response{}, fmt.Errorf("llm: encoding the converse request: %w", err)
	}
	// The model id (an ARN has ':' and '/') is one path segment, escaped
	// strictly as the AWS SDKs do; the signature escapes it once more.
	u := strings.TrimSuffix(c.endpoint.BaseURL, "/") + "/model/" + awsEscape(req.Model, true) + "/converse-stream"
	return call{
		api: APIConverse, url: u, body: body, contentType: "application/vnd.amazon.eventstream",
		decode: decodeConverse, endpointCfg: c.endpoint, limits: req.outputLimits(),
		prepare: func(_ context.Context, r *http.Request) error {
			signV4(r, body, c.creds, c.region, "bedrock", time.Now())
			return nil
		},
	}.run(ctx, fn)
}

// cvBlock is a content block: text, toolUse or toolResult.
type cvBlock struct {
	Text       *string       `json:"text,omitempty"`
	ToolUse    *cvToolUse    `json:"toolUse,omitempty"`
	ToolResult *cvToolResult `json:"toolResult,omitempty"`
}

type cvToolUse struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

type cvToolResult struct {
	ToolUseID string    `json:"toolUseId"`
	Content   []cvBlock `json:"content"`
	Status    string    `json:"status,omitempty"`
}

type cvMessage struct {
	Role    string    `json:"role"`
	Content []cvBlock `json:"content"`
}

func converseBody(req Request) map[string]any {
	var msgs []cvMessage
	for _, m := range req.Messages {
		role, blocks := cvBlocks(m)
		if len(blocks) == 0 {
			continue
		}
		if n := len(msgs); n > 0 && msgs[n-1].Role == role {
			msgs[n-1].Content = append(msgs[n-1].Content, blocks...)
			continue
		}
		msgs = append(msgs, cvMessage{Role: role, Content: blocks})
	}
	b := map[string]any{"messages": msgs}
	if req.System != "" {
		b["system"] = []map[string]string{{"text": req.System}}
	}
	if len(req.Tools) > 0 {
		tools := make([]map[string]any, len(req.Tools))
		for i, t := range req.Tools {
			params := t.Parameters
			if len(params) == 0 {
				params = emptyObjectSchema
			}
			spec := map[string]any{"name": t.Name, "inputSchema": map[string]any{"json": params}}
			if t.Description != "" {
				spec["description"] = t.Description
			}
			tools[i] = map[string]any{"toolSpec": spec}
		}
		b["toolConfig"] = map[string]any{"tools": tools}
	}
	s := req.effective()
	inf := map[string]any{}
	put(inf, "maxTokens", s.MaxOutputTokens)
	put(inf, "temperature", s.Temperature)
	put(inf, "topP", s.TopP)
	if stop := s.stops(); len(stop) > 0 {
		inf["stopSequences"] = stop
	}
	if len(inf) > 0 {
		b["inferenceConfig"] = inf
	}
	if s.Latency != "" {
		b["performanceConfig"] = map[string]any{"latency": s.Latency}
	}
	return b
}

// cvBlocks maps a message; tool results are toolResult blocks of user turns
// and consecutive turns of one role merge, as the API asks.
func cvBlocks(m Message) (string, []cvBlock) {
	switch m.Role {
	case RoleTool:
		text := m.Text
		r := &cvToolResult{ToolUseID: m.ToolCallID, Content: []cvBlock{{Text: &text}}}
		if m.IsError {
			r.Status = "error"
		}
		return "user", []cvBlock{{ToolResult: r}}
	case RoleAssistant:
		var blocks []cvBlock
		if m.Text != "" {
			text := m.Text
			blocks = append(blocks, cvBlock{Text: &text})
		}
		for _, tc := range m.ToolCalls {
			input := json.RawMessage(tc.Arguments)
			if len(input) == 0 {
				input = json.RawMessage("{}")
			}
			blocks = append(blocks, cvBlock{ToolUse: &cvToolUse{ToolUseID: tc.ID, Name: tc.Name, Input: input}})
		}
		return "assistant", blocks
	default:
		if m.Text == "" {
			return "user", nil // the API refuses empty text blocks
		}
		text := m.Text
		return "user", []cvBlock{{Text: &text}}
	}
}

// cvEvent is any event's payload; the :event-type header says which members
// are set.
type cvEvent struct {
	ContentBlockIndex int `json:"contentBlockIndex"`
	Start             struct {
		ToolUse *struct {
			ToolUseID string `json:"toolUseId"`
			Name      string `json:"name"`
		} `json:"toolUse"`
	} `json:"start"`
	Delta struct {
		Text    *string `json:"text"`
		ToolUse *struct {
			Input string `json:"input"`
		} `json:"toolUse"`
	} `json:"delta"`
	StopReason string `json:"stopReason"`
	Usage      *struct {
		InputTokens           int `json:"inputTokens"`
		OutputTokens          int `json:"outputTokens"`
		CacheReadInputTokens  int `json:"cacheReadInputTokens"`
		CacheWriteInputTokens int `json:"cacheWriteInputTokens"`
	} `json:"usage"`
	Message string `json:"message"`
}

// cvAssembly accumulates a streamed answer.
type cvAssembly struct {
	emit   func(Event) error
	text   strings.Builder
	calls  []ToolCall
	args   pieces      // by tool call index
	blocks map[int]int // content block index -> tool call index
	usage  Usage
	stop   string
}

// decodeConverse reads the event stream: messageStart, content blocks,
// messageStop (the stop reason) and metadata (the usage), which Bedrock
// sends last; the stream is complete once both arrived.
func decodeConverse(_ context.Context, body io.Reader, maxEvent int, emit func(Event) error) (Response, error) {
	a := &cvAssembly{emit: emit, blocks: map[int]int{}}
	for {
		msg, err := readEventMessage(body, maxEvent)
		if errors.Is(err, io.EOF) {
			return Response{}, ErrStreamCut
		}
		if err != nil {
			return Response{}, err
		}
		var e cvEvent
		if len(msg.payload) > 0 {
			if err := json.Unmarshal(msg.payload, &e); err != nil {
				return Response{}, fmt.Errorf("decoding a %q event: %w", msg.headers[":event-type"], err)
			}
		}
		switch msg.headers[":message-type"] {
		case "exception":
			typ := msg.headers[":exception-type"]
			return Response{}, &Error{API: APIConverse, Type: typ, Message: e.Message, Retryable: cvRetryable(typ)}
		case "error":
			return Response{}, &Error{API: APIConverse, Type: msg.headers[":error-code"], Message: msg.headers[":error-message"]}
		}
		if msg.headers[":event-type"] == "metadata" {
			if e.Usage != nil {
				u := e.Usage
				a.usage = Usage{InputTokens: u.InputTokens + u.CacheReadInputTokens + u.CacheWriteInputTokens, OutputTokens: u.OutputTokens}
			}
			return a.end()
		}
		if err := a.event(msg.headers[":event-type"], e); err != nil {
			return Response{}, err
		}
	}
}

func cvRetryable(exception string) bool {
	switch exception {
	case "throttlingException", "serviceUnavailableException", "internalServerException", "modelStreamErrorException":
		return true
	}
	return false
}

func (a *cvAssembly) event(typ string, e cvEvent) error {
	switch typ {
	case "contentBlockStart":
		tu := e.Start.ToolUse
		if tu == nil {
			return nil
		}
		if tu.ToolUseID == "" || tu.Name == "" {
			return &Error{API: APIConverse, Message: "the model streamed a toolUse block without id or name"}
		}
		i := len(a.calls)
		a.blocks[e.ContentBlockIndex] = i
		a.calls = append(a.calls, ToolCall{ID: tu.ToolUseID, Name: tu.Name})
		return a.emit(Event{Kind: EventToolCallStart, ToolIndex: i, ToolCall: a.calls[i]})
	case "contentBlockDelta":
		switch {
		case e.Delta.Text != nil && *e.Delta.Text != "":
			a.text.WriteString(*e.Delta.Text)
			return a.emit(Event{Kind: EventTextDelta, Text: *e.Delta.Text})
		case e.Delta.ToolUse != nil:
			i, ok := a.blocks[e.ContentBlockIndex]
			if !ok {
				return fmt.Errorf("toolUse delta for block %d, which is no toolUse", e.ContentBlockIndex)
			}
			if e.Delta.ToolUse.Input == "" {
				return nil
			}
			a.args.add(i, e.Delta.ToolUse.Input)
			return a.emit(Event{Kind: EventToolCallDelta, ToolIndex: i, Text: e.Delta.ToolUse.Input})
		}
	case "contentBlockStop":
		if i, ok := a.blocks[e.ContentBlockIndex]; ok {
			a.calls[i].Arguments = a.args.text(i)
			if a.calls[i].Arguments == "" {
				a.calls[i].Arguments = "{}"
			}
			return a.emit(Event{Kind: EventToolCallDone, ToolIndex: i, ToolCall: a.calls[i]})
		}
	case "messageStop":
		a.stop = e.StopReason
	}
	// messageStart, reasoning deltas and later event types carry nothing we use.
	return nil
}

func (a *cvAssembly) end() (Response, error) {
	if a.stop == "" {
		return Response{}, fmt.Errorf("%w: metadata before messageStop", ErrStreamCut)
	}
	if err := a.emit(Event{Kind: EventUsage, Usage: a.usage}); err != nil {
		return Response{}, err
	}
	reason := cvFinishReason(a.stop)
	if err := a.emit(Event{Kind: EventFinish, FinishReason: reason}); err != nil {
		return Response{}, err
	}
	msg := Message{Role: RoleAssistant, Text: a.text.String(), ToolCalls: a.calls}
	return Response{Message: msg, Usage: a.usage, FinishReason: reason, VendorFinishReason: a.stop}, nil
}

func cvFinishReason(r string) FinishReason {
	switch r {
	case "end_turn", "stop_sequence":
		return FinishStop
	case "tool_use":
		return FinishToolCalls
	case "max_tokens", "model_context_window_exceeded":
		return FinishLength
	case "guardrail_intervened", "content_filtered":
		return FinishContentFilter
	}
	return FinishOther
}
