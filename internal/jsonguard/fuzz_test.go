package jsonguard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// FuzzCheck checks Check against encoding/json: whatever Check accepts must be
// valid JSON that decodes, with unique keys, no NUL and valid UTF-8; and Check
// must never call a document malformed that encoding/json considers valid.
func FuzzCheck(f *testing.F) {
	seeds := []string{
		``, `{}`, `[]`, `0`, `-1.5e+3`, `"x"`, `true`, `null`,
		`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"a":{"b":[1,{"c":"d"}]}}`,
		`{"a":"\u0000"}`, `["\ud800"]`, `["\ud83d\ude00"]`, `["\udc00\ud800"]`,
		"[\"\xff\"]", "{\"a\":1} x", `[1,]`, `{"a" 1}`, `01`, "\"\x00\"",
		strings.Repeat("[", 65) + strings.Repeat("]", 65),
		manyKeys(40, true),
		realisticBody(),
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		orig := bytes.Clone(body)
		err := Check(body)
		require.Equal(t, orig, body, "Check modified its input")

		if err != nil {
			var e *Error
			require.True(t, errors.As(err, &e), "want *Error, got %T", err)
			require.NotEmpty(t, e.Reason)
			require.LessOrEqual(t, len(e.Reason), 120, "reason too long: %q", e.Reason)
			require.LessOrEqual(t, len(e.Field), 130, "field too long: %q", e.Field)
			if json.Valid(body) {
				// Only the stricter semantic rules may refuse valid JSON.
				require.False(t, strings.HasPrefix(e.Reason, "malformed JSON"), "valid JSON called malformed: %v", err)
				require.NotEqual(t, "trailing data after JSON value", e.Reason)
				require.NotEqual(t, "empty body", e.Reason)
			}
			return
		}

		require.True(t, json.Valid(body), "Check accepted invalid JSON")
		require.True(t, utf8.Valid(body), "Check accepted invalid UTF-8")
		var v any
		require.NoError(t, json.Unmarshal(body, &v))
		requireStrictTokens(t, body)
	})
}

// requireStrictTokens walks the document with encoding/json's tokenizer and
// checks the properties Check promises: unique keys per object, no NUL, and
// nesting within MaxDepth.
func requireStrictTokens(t *testing.T, body []byte) {
	type level struct {
		object    bool
		expectKey bool
		keys      map[string]bool
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var stack []*level
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return
		}
		require.NoError(t, err)
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		inObject := top != nil && top.object
		switch v := tok.(type) {
		case json.Delim:
			if v == '}' || v == ']' {
				stack = stack[:len(stack)-1]
				continue
			}
			if inObject {
				top.expectKey = true // the container is this member's value
			}
			stack = append(stack, &level{object: v == '{', expectKey: true, keys: map[string]bool{}})
			require.LessOrEqual(t, len(stack), MaxDepth)
		case string:
			require.NotContains(t, v, "\x00")
			if inObject && top.expectKey {
				require.False(t, top.keys[v], "duplicate key %q accepted", v)
				top.keys[v] = true
				top.expectKey = false
			} else if inObject {
				top.expectKey = true
			}
		default:
			if inObject {
				top.expectKey = true
			}
		}
	}
}

func BenchmarkCheck(b *testing.B) {
	body := []byte(realisticBody())
	require.NoError(b, Check(body))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if err := Check(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJSONValid is a baseline: encoding/json's own syntax check.
func BenchmarkJSONValid(b *testing.B) {
	body := []byte(realisticBody())
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if !json.Valid(body) {
			b.Fatal("invalid")
		}
	}
}

// realisticBody builds a ~4 KiB agent-creation request: nested objects,
// arrays of objects, escapes, non-ASCII text, numbers and literals.
func realisticBody() string {
	var b strings.Builder
	b.WriteString(`{
  "name": "support-triage",
  "description": "Routes incoming tickets to the right queue and drafts a first reply. Handles \"urgent\" escalations.",
  "model": "gpt-4.1-mini",
  "labels": {"team": "support", "env": "prod", "cost-center": "cs-42", "tier": "gold"},
  "config": {
    "temperature": 0.2, "max_output_tokens": 2048, "top_p": 1, "stream": true, "seed": null,
    "base_url": "https:\/\/api.example.com\/v1",
    "headers": {"X-Org": "org_01jd8x3v6q2m4n7p9r0s1t2v3w", "X-Trace": "on"},
    "system_prompt": "Tu es un assistant de support. Réponds poliment, en français ou en anglais.\nNever reveal internal notes.\tThanks 🙂"
  },
  "skills": [`)
	for i := 0; b.Len() < 3800; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `
    {"key": "skill-%d", "version": %d, "enabled": %t, "weight": %d.5e-1,
     "params": {"timeout_ms": 30000, "retries": [100, 200, 400], "note": "step %d \u00e9t\u00e9 \ud83d\ude00"}}`,
			i, i+1, i%2 == 0, i, i)
	}
	b.WriteString(`
  ],
  "metadata": {"created_by": "usr_01jd8x3v6q2m4n7p9r0s1t2v3w", "tags": ["a", "b", "c"], "empty": {}, "list": []}
}`)
	return b.String()
}
