package jsonguard

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckAccepts(t *testing.T) {
	t.Parallel()
	valid := []string{
		`{}`, `[]`, `0`, `-0`, `1.5e+10`, `-12.25E-3`, `true`, `false`, `null`, `""`,
		" \t\r\n{\"a\":1} \n",
		`{"a":{"a":{"a":[]}},"b":[{"a":1},{"a":2}]}`, // same key in different objects
		`{"":1,"a":2}`,
		`{"A":1,"a":2}`, // keys are case-sensitive; case variants are the decoder's concern
		`{"a\/b":"\"\\\/\b\f\n\r\t"}`,
		`{"emoji":"\ud83d\ude00","raw":"😀 héllo"}`,
		`{"replacement":"\ufffd�"}`,
		`[1,[2,[3,[4]]],{"x":null}]`,
		`[1e-400, 1.7976931348623157e308, 0e999999999999999999, 1E+2]`, // underflow is fine: it decodes as 0
		"[" + strings.Repeat("1", 308) + "]",
		strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth),
		manyKeys(100, false),
	}
	for _, body := range valid {
		require.NoError(t, Check([]byte(body)), "body %q", truncateForLog(body))
	}
}

func TestCheckRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, field, reason string
	}{
		{"empty", ``, "", "empty body"},
		{"only whitespace", " \n\t", "", "empty body"},
		{"trailing value", `{"a":1} {"b":2}`, "", "trailing data after JSON value"},
		{"trailing garbage", `[1]x`, "", "trailing data after JSON value"},
		{"trailing number", `01`, "", "trailing data after JSON value"},
		{"unclosed object", `{"a":1`, "a", "malformed JSON: unexpected end of input"},
		{"unclosed string", `{"a":"b`, "a", "malformed JSON: unexpected end of input"},
		{"missing colon", `{"a" 1}`, "", `malformed JSON: unexpected '1' after object key (want ':') at offset 5`},
		{"missing comma", `{"a":1 "b":2}`, "a", `malformed JSON: unexpected '"' after object member (want ',' or '}') at offset 7`},
		{"trailing comma", `[1,]`, "[1]", `malformed JSON: unexpected ']' looking for a value at offset 3`},
		{"bare word", `nope`, "", `malformed JSON: unexpected 'o' in literal null at offset 1`},
		{"single quotes", `{'a':1}`, "", `malformed JSON: unexpected '\'' looking for an object key at offset 1`},
		{"bad number", `[1.]`, "[0]", `malformed JSON: unexpected ']' in number at offset 3`},
		{"plus number", `+1`, "", `malformed JSON: unexpected '+' looking for a value at offset 0`},
		{"bad escape", `["\x"]`, "[0]", `malformed JSON: invalid escape in string at offset 2`},
		{"short unicode escape", `["\u12"]`, "[0]", `malformed JSON: invalid \u escape at offset 2`},
		{"raw control char", "[\"a\tb\"]", "[0]", `malformed JSON: control character in string at offset 3`},
		{"bom", "\xef\xbb\xbf{}", "", `malformed JSON: unexpected '\ufeff' looking for a value at offset 0`},

		{"duplicate top-level", `{"name":1,"name":2}`, "name", `duplicate key "name"`},
		{"duplicate nested", `{"config":{"headers":{"x":"1","x":"2"}}}`, "config.headers.x", `duplicate key "x"`},
		{"duplicate in array element", `{"items":[{},{},{"name":1,"id":2,"name":3}]}`, "items[2].name", `duplicate key "name"`},
		{"duplicate via escape", `{"a":1,"\u0061":2}`, "a", `duplicate key "a"`},
		{"duplicate via escape first", `{"\u00e9":1,"é":2}`, `["é"]`, `duplicate key "é"`},
		{"duplicate via surrogate pair", `{"😀":1,"\ud83d\ude00":2}`, `["😀"]`, `duplicate key "😀"`},
		{"duplicate slash escape", `{"a/b":1,"a\/b":2}`, `["a/b"]`, `duplicate key "a/b"`},
		{"duplicate empty key", `{"":1,"":2}`, `[""]`, `duplicate key ""`},
		{"duplicate in large object", manyKeys(100, true), "k0", `duplicate key "k0"`},
		{"duplicate after nested object", `{"a":{"b":1,"c":2},"d":3,"a":4}`, "a", `duplicate key "a"`},

		{"invalid utf8 value", "{\"a\":\"\xff\"}", "a", "invalid UTF-8"},
		{"invalid utf8 key", "{\"a\":{\"\xc3\x28\":1}}", "a", "invalid UTF-8 in key"},
		{"encoded surrogate", "[\"\xed\xa0\x80\"]", "[0]", "invalid UTF-8"},
		{"overlong", "[\"\xc0\xaf\"]", "[0]", "invalid UTF-8"},
		{"truncated utf8 at end", "\"\xe2\x82", "", "invalid UTF-8"},
		{"invalid utf8 outside string", "[\xff]", "[0]", "invalid UTF-8"},

		{"nul escape", `{"a":"x\u0000y"}`, "a", `string contains NUL (\u0000)`},
		{"nul escape in key", `{"a":{"b\u0000":1}}`, "a", `key contains NUL (\u0000)`},
		{"raw nul", "{\"items\":[\"ok\",\"x\x00\"]}", "items[1]", `string contains NUL (\u0000)`},

		{"lone high surrogate", `{"a":"\ud800"}`, "a", "unpaired surrogate escape"},
		{"high surrogate then text", `{"a":"\ud800x"}`, "a", "unpaired surrogate escape"},
		{"high surrogate then non-low escape", `{"a":"\ud800\u0041"}`, "a", "unpaired surrogate escape"},
		{"two high surrogates", `["\ud800\ud800"]`, "[0]", "unpaired surrogate escape"},
		{"lone low surrogate", `["\udc00"]`, "[0]", "unpaired surrogate escape"},
		{"reversed pair", `["\ude00\ud83d"]`, "[0]", "unpaired surrogate escape"},
		{"surrogate in key", `{"\udfff":1}`, "", "unpaired surrogate escape in key"},

		{"too deep", strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1),
			"..." + strings.Repeat("[0]", 40), "nesting deeper than 64 levels"},
		{"too deep objects", strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1),
			"...a" + strings.Repeat(".a", 59), "nesting deeper than 64 levels"},

		{"number overflow", `{"n":1e400}`, "n", "number out of range"},
		{"negative overflow", `[-1.8e308]`, "[0]", "number out of range"},
		{"long integer overflow", "[" + strings.Repeat("9", 309) + "]", "[0]", "number out of range"},

		{"odd key in path", `{"labels":{"a.b":{"c":"\u0000"}}}`, `labels["a.b"].c`, `string contains NUL (\u0000)`},
		{"empty key in path", `{"":["\u0000"]}`, `[""][0]`, `string contains NUL (\u0000)`},
		{"array root path", `[{"name":"\ud800"}]`, "[0].name", "unpaired surrogate escape"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := Check([]byte(tt.body))
			require.Error(t, err)
			var e *Error
			require.True(t, errors.As(err, &e), "want *Error, got %T", err)
			require.Equal(t, tt.reason, e.Reason)
			require.Equal(t, tt.field, e.Field)
		})
	}
}

func TestErrorString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "empty body", (&Error{Reason: "empty body"}).Error())
	require.Equal(t, `config.headers: duplicate key "x"`,
		(&Error{Field: "config.headers", Reason: `duplicate key "x"`}).Error())
}

func TestMessagesStayShort(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("k", 500)
	bodies := []string{
		`{"` + long + `":1,"` + long + `":2}`,
		`{"` + long + `":{"` + long + `":"\u0000"}}`,
		`{"` + strings.Repeat("é", 300) + `":1,"` + strings.Repeat("é", 300) + `":2}`,
	}
	for _, body := range bodies {
		err := Check([]byte(body))
		var e *Error
		require.True(t, errors.As(err, &e))
		require.LessOrEqual(t, len(e.Reason), 80, e.Reason)
		require.LessOrEqual(t, len(e.Field), 130, e.Field)
		require.NotContains(t, e.Error(), strings.Repeat("k", 41))
	}
}

func TestCheckDoesNotRetainOrModify(t *testing.T) {
	t.Parallel()
	body := []byte(`{"a\u0062":[1,{"c":"d"}],"e":"\ud83d\ude00"}`)
	orig := string(body)
	for range 3 {
		require.NoError(t, Check(body))
	}
	require.Equal(t, orig, string(body))
}

func manyKeys(n int, dup bool) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k`)
		b.WriteString(strings.Repeat("x", i%3))
		b.WriteString(strconv.Itoa(i))
		b.WriteString(`":1`)
	}
	if dup {
		b.WriteString(`,"k0":2`)
	}
	b.WriteByte('}')
	return b.String()
}

func truncateForLog(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}
