// Package tool defines what the agent loop calls: a Tool is one function the
// model may ask for, with its definition (name, description, JSON Schema of
// its arguments) and the code that serves a call. Toolsets build a run's
// Tools from its RunContext; each is a package under this one (web,
// environment, memory, connection, subagent). The loop offers their
// definitions to the model and routes each tool call to Call by name.
package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/svcdev/svc/internal/llm"
)

// Tool is one callable function.
type Tool struct {
	// Def is what the model sees. Def.Name is unique within a run's tools and
	// matches ^[a-zA-Z0-9_-]{1,64}$ (every vendor accepts that).
	Def llm.Tool
	// Call serves one call with the model's arguments (a JSON object, not yet
	// validated against Def.Parameters). A Result with IsError tells the model
	// the call failed (bad arguments, a vendor's refusal, a command that could
	// not start); the run goes on. A returned error is a failure of svc or of
	// ctx (cancelled, lease lost, the environment gone): the step stops and is
	// retried from the last checkpoint or the run fails.
	Call func(ctx context.Context, args json.RawMessage) (Result, error)
	// Toolset is the name of the toolset that made the tool (agent.Toolsets):
	// an agent's tool policy may decide for all of its tools at once.
	Toolset string
}

// Result is what a call gives back to the model.
type Result struct {
	// Text is the content the model reads, usually JSON or plain text.
	Text string `json:"text"`
	// IsError marks a failed call.
	IsError bool `json:"is_error"`
	// Pending says the answer comes later (a subagent's): the step is
	// recorded, the run waits, and the answer is read when it continues.
	Pending bool `json:"pending,omitempty"`
}

type callIDKey struct{}

// WithCallID returns ctx carrying the id of the tool call being served.
func WithCallID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, callIDKey{}, id)
}

// CallID is the id of the tool call ctx serves, "" outside a call.
func CallID(ctx context.Context) string {
	id, _ := ctx.Value(callIDKey{}).(string)
	return id
}

// Errorf is a failed call's Result, with a message the model can act on.
// The message must not hold credentials or a vendor's raw body.
func Errorf(format string, args ...any) Result {
	return Result{Text: fmt.Sprintf(format, args...), IsError: true}
}

// JSON is a successful Result carrying v as JSON.
func JSON(v any) (Result, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Result{}, fmt.Errorf("tool: encode result: %w", err)
	}
	return Result{Text: string(b)}, nil
}

// Decode decodes a call's arguments into v, refusing unknown members and
// trailing data; a failure is returned as a Result for the model, not an
// error, since the model wrote the arguments.
func Decode(args json.RawMessage, v any) (Result, bool) {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return Errorf("invalid arguments: %v", err), false
	}
	if dec.More() {
		return Errorf("invalid arguments: trailing data after the JSON object"), false
	}
	return Result{}, true
}
