package connection

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/svcdev/svc/internal/llm"
)

// Bounds of a tool definition.
const (
	maxNameLen        = 64
	maxDescription    = 1000 // characters of Composio's description kept
	maxParameterBytes = 64 << 10
)

// namer gives tools names that match ^[a-zA-Z0-9_-]{1,64}$ and are unique
// among the names it gave.
type namer struct{ used map[string]bool }

func newNamer() *namer { return &namer{used: map[string]bool{}} }

// name is the tool name of action slug of connectionID: the slug with any
// other character made '_', prefixed with alias and '_' when alias is not
// empty (two connections of one toolkit), cut to 64 with a hash of what was
// cut when longer, and given a hash of the connection and slug when taken.
func (n *namer) name(alias, slug, connectionID string) (string, bool) {
	full := sanitize(slug)
	if alias != "" {
		full = alias + "_" + full
	}
	name := full
	if len(name) > maxNameLen {
		name = name[:maxNameLen-9] + "_" + shortHash(full)
	}
	if n.used[name] {
		name = cut(name, maxNameLen-9) + "_" + shortHash(connectionID+"\x00"+slug)
	}
	if n.used[name] || name == "" {
		return "", false
	}
	n.used[name] = true
	return name, true
}

// sanitize maps characters outside [a-zA-Z0-9_-] to '_'.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '_'
	}, s)
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func shortHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:4])
}

// definition is what the model sees of action a of connection tg.
func definition(name string, a action, tg target, truncated bool) llm.Tool {
	desc := strings.TrimSpace(strings.ToValidUTF8(a.Description, "\uFFFD"))
	if desc == "" {
		desc = strings.TrimSpace(a.Name)
	}
	if utf8.RuneCountInString(desc) > maxDescription {
		desc = string([]rune(desc)[:maxDescription]) + "…"
	}
	var b strings.Builder
	if desc != "" {
		b.WriteString(desc)
		b.WriteString("\n\n")
	}
	fmt.Fprintf(&b, "Action %s of the connection %q (app %s, through Composio), acting as its connected account.", a.Slug, tg.name, tg.app)
	if truncated {
		fmt.Fprintf(&b, " Only the first %d actions of this connection are offered.", MaxActions)
	}
	return llm.Tool{Name: name, Description: b.String(), Parameters: a.Params}
}

// parameters makes an input schema fit for a tool definition: a JSON object
// schema of at most maxParameterBytes. An absent schema is the empty
// object's; a schema without a type is given "object"; another type is
// refused.
func parameters(raw json.RawMessage) (json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return json.RawMessage(`{"type":"object","properties":{}}`), true
	}
	if len(raw) > maxParameterBytes {
		return nil, false
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil || schema == nil {
		return nil, false
	}
	switch typ := schema["type"]; typ {
	case nil:
		schema["type"] = "object"
	case "object":
	default:
		return nil, false
	}
	if _, ok := schema["properties"]; !ok {
		schema["properties"] = map[string]any{}
	}
	out, err := json.Marshal(schema)
	if err != nil {
		return nil, false
	}
	return out, true
}
