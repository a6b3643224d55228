package connection

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/svcdev/svc/internal/tool"
)

// MaxResultBytes bounds the text of a call's result; a longer result is cut
// and says so.
const MaxResultBytes = 100 << 10

// executeAnswer is the answer of POST /api/v3/tools/execute/{tool_slug}.
type executeAnswer struct {
	Data       json.RawMessage `json:"data"`
	Error      json.RawMessage `json:"error"`
	Successful *bool           `json:"successful"`
}

// caller serves calls of action a of connection connectionID.
func (t *Toolset) caller(workspaceID, connectionID string, a action) func(context.Context, json.RawMessage) (tool.Result, error) {
	return func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
		return t.execute(ctx, workspaceID, connectionID, a, args)
	}
}

// execute checks that the connection may still be used and runs the action
// as its connected account. Only a failure of ctx or of the database is an
// error; the rest is a Result for the model.
func (t *Toolset) execute(ctx context.Context, workspaceID, connectionID string, a action, args json.RawMessage) (tool.Result, error) {
	arguments, res, ok := objectArguments(args)
	if !ok {
		return res, nil
	}
	tg, err := t.load(ctx, workspaceID, connectionID)
	var ce *Error
	switch {
	case errors.As(err, &ce):
		return tool.Errorf("%s cannot be called: %s", a.Slug, ce.Msg), nil
	case err != nil:
		if ctx.Err() != nil {
			return tool.Result{}, fmt.Errorf("%s: %w", a.Slug, context.Cause(ctx))
		}
		return tool.Result{}, fmt.Errorf("%s: %w", a.Slug, err)
	}
	body := map[string]any{"connected_account_id": tg.accountID, "user_id": tg.userID, "arguments": arguments}
	if a.Version != "" {
		body["version"] = a.Version
	}
	var ans executeAnswer
	err = t.call(ctx, tg, "POST", "/api/v3/tools/execute/"+url.PathEscape(a.Slug), body, &ans)
	var ve *vendorError
	switch {
	case errors.As(err, &ve):
		t.log.Info("connection action failed at Composio", "connection_id", connectionID, "action", a.Slug, "status", ve.status, "reason", ve.msg)
		return tool.Errorf("%s failed: %s", a.Slug, ve.msg), nil
	case err != nil:
		return tool.Result{}, fmt.Errorf("%s: %w", a.Slug, err)
	}
	if ans.Successful == nil {
		return tool.Errorf("%s failed: Composio's answer could not be read", a.Slug), nil
	}
	if !*ans.Successful {
		msg := clean(messageOf(ans.Error), tg)
		if msg == "" {
			msg = "the app gave no reason"
		}
		return tool.Errorf("%s failed: %s", a.Slug, msg), nil
	}
	data := bytes.TrimSpace(ans.Data)
	if len(data) == 0 {
		data = []byte("null")
	}
	return tool.Result{Text: bounded(redact(string(data), tg))}, nil
}

// objectArguments checks that the model's arguments are one JSON object
// (empty is {}); otherwise the Result says why.
func objectArguments(args json.RawMessage) (json.RawMessage, tool.Result, bool) {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 {
		return json.RawMessage("{}"), tool.Result{}, true
	}
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if trimmed[0] != '{' || dec.Decode(&obj) != nil {
		return nil, tool.Errorf("invalid arguments: must be a JSON object"), false
	}
	if dec.More() {
		return nil, tool.Errorf("invalid arguments: trailing data after the JSON object"), false
	}
	return trimmed, tool.Result{}, true
}

// redact takes the key and the connected account id out of a result.
func redact(s string, tg target) string {
	for _, secret := range []string{tg.key, tg.accountID} {
		if secret != "" && strings.Contains(s, secret) {
			s = strings.ReplaceAll(s, secret, "[redacted]")
		}
	}
	return s
}

// bounded cuts s at MaxResultBytes on a rune boundary, saying so.
func bounded(s string) string {
	if len(s) <= MaxResultBytes {
		return s
	}
	n := MaxResultBytes
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + fmt.Sprintf("\n[truncated: the result has %d bytes; the first %d are shown]", len(s), n)
}
