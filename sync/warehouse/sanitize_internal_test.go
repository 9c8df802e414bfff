package warehouse

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestSanitizeJSON: what jsonb refuses becomes the replacement character,
// in place and of the same length; a pair of surrogate escapes stays; raw
// that is not JSON, or nested too deep, becomes a JSON string.
func TestSanitizeJSON(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", maxRawNesting+1) + strings.Repeat("]", maxRawNesting+1)
	deepEnough := strings.Repeat("[", maxRawNesting) + strings.Repeat("]", maxRawNesting)
	for _, c := range []struct{ raw, want string }{
		{``, `null`},
		{`{"a":1}`, `{"a":1}`},
		{` {"a": [1, "x"]} `, ` {"a": [1, "x"]} `},
		{`{"a":"\u0000"}`, `{"a":"\ufffd"}`},
		{`{"a\u0000":"b"}`, `{"a\ufffd":"b"}`},
		{`{"a":"\ud83d\ude00"}`, `{"a":"\ud83d\ude00"}`},
		{`{"a":"\ud83d"}`, `{"a":"\ufffd"}`},
		{`{"a":"\ude00\ud83d"}`, `{"a":"\ufffd\ufffd"}`},
		{`{"a":"\ud83d\u0041"}`, `{"a":"\ufffd\u0041"}`},
		{`{"a":"\\u0000"}`, `{"a":"\\u0000"}`},
		{`{"a":"\"\u0000"}`, `{"a":"\"\ufffd"}`},
		{"{\"a\":\"\xff\"}", `{"a":"` + "\uFFFD" + `"}`},
		{`"\u0000"`, `"\ufffd"`},
		{`{"a":`, `"{\"a\":"`},
		{`{"a":1} x`, `"{\"a\":1} x"`},
		{`{"a":"\u0000"`, `"{\"a\":\"\\ufffd\""`},
		{"{\"a\":\"\x00\"}", `"{\"a\":\"` + "\uFFFD" + `\"}"`},
		{deepEnough, deepEnough},
		{deep, `"` + deep + `"`},
	} {
		raw := []byte(c.raw)
		got := string(sanitizeJSON(raw))
		if got != c.want {
			t.Errorf("sanitizeJSON(%.40q) = %.60q, want %.60q", c.raw, got, c.want)
		}
		if string(raw) != c.raw {
			t.Errorf("sanitizeJSON(%.40q) changed its argument", c.raw)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("sanitizeJSON(%.40q) = %.60q: not JSON", c.raw, got)
		}
	}
}

// TestSanitizeJSONKeepsWhatIsJSON: raw is kept as it is exactly when
// encoding/json finds it valid.
func TestSanitizeJSONKeepsWhatIsJSON(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{`0`, `01`, `-0`, `-`, `1.`, `1.5`, `.5`, `1e`, `1E+2`, `1e-07`, `[1,]`, `[,1]`, `[1 2]`,
		`{"a":1,}`, `{"a" 1}`, `{1:2}`, `{"a":1 "b":2}`, `tru`, `true`, `nul`, `null`, `"\x"`, `"\/"`, `"\u12"`,
		`"\u12G4"`, "\"\t\"", "\"a\tb\"", `[]]`, `[[]`, `{}`, `[]`, ` `, `"`, `""`, "[1]\n", "\t{\"a\":{}}\r\n",
		`{"a":{"b":[{}]}}`, `"a" "b"`, `+1`, `1e5.5`, `0x10`, `[-]`, `Infinity`, `NaN`} {
		got := string(sanitizeJSON([]byte(raw)))
		if kept := got == raw; kept != json.Valid([]byte(raw)) {
			t.Errorf("sanitizeJSON(%q) = %q: kept %v, json.Valid %v", raw, got, kept, json.Valid([]byte(raw)))
		}
	}
}

// BenchmarkSanitizeJSON sanitizes a user resource of some 3 kB holding
// escapes, as a quarantined user's raw is.
func BenchmarkSanitizeJSON(b *testing.B) {
	attrs := strings.Repeat(`"title": "Account Executive \u00e9 \ud83d\ude00 \"quoted\"", "n": [1, 2.5, true, null], `, 30)
	raw := []byte(`{"id": 1, "type": "user", "attributes": {` + attrs + `"bad": "\u0000"}}`)
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		sanitizeJSON(raw)
	}
}
