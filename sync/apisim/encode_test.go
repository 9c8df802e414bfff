package apisim

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestAppendStringIsValidJSON(t *testing.T) {
	t.Parallel()
	cases := []string{
		"", "plain", `quote " and backslash \`, "newline\n tab\t cr\r", "\x00\x01\x1f\x7f",
		"é ü ß 李 王芳 🚀 👩‍👩‍👧", "<b>&amp;</b>", "\u2028\u2029", "\b\f", "invalid \xff\xfe utf8", "\xc3",
		strings.Repeat("é", 225),
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		enc := appendString(nil, s)
		var got string
		if err := json.Unmarshal(enc, &got); err != nil {
			t.Fatalf("appendString(%q) = %s: not JSON: %v", s, enc, err)
		}
		want := s
		if !utf8.ValidString(s) {
			// Like encoding/json, each invalid byte becomes U+FFFD.
			wb, _ := json.Marshal(s)
			mustUnmarshal(t, wb, &want)
		}
		if got != want {
			t.Fatalf("appendString(%q) decodes to %q, want %q", s, got, want)
		}
	}
}

func TestAppendMillis(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	instants := []int64{0, 1, 999, 86_399_999, 951_782_400_000 /* 2000-02-29 */, 4_102_444_799_999}
	for range 10_000 {
		instants = append(instants, r.Int64N(4_102_444_800_000))
	}
	for _, ms := range instants {
		want := `"` + time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") + `"`
		if got := string(appendMillis(nil, ms)); got != want {
			t.Fatalf("appendMillis(%d) = %s, want %s", ms, got, want)
		}
	}
}

func TestParseTimestamp(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		ok   bool
		want string
	}{
		{"2024-05-01T12:34:56.789Z", true, "2024-05-01T12:34:56.789Z"},
		{"2024-05-01T12:34:56Z", true, "2024-05-01T12:34:56.000Z"},
		{"2024-05-01T14:34:56.7+02:00", true, "2024-05-01T12:34:56.700Z"},
		{"2024-05-01", true, "2024-05-01T00:00:00.000Z"},
		{"2024-05-01T12:34:56.789123Z", false, ""}, // microseconds: refused, as the real API does
		{"yesterday", false, ""},
		{"2024-13-01", false, ""},
	}
	for _, c := range cases {
		got, ok := parseTimestamp(c.in)
		if ok != c.ok || ok && formatMillis(got) != c.want {
			t.Errorf("parseTimestamp(%q) = %s, %v; want %s, %v", c.in, formatMillis(got), ok, c.want, c.ok)
		}
	}
}
