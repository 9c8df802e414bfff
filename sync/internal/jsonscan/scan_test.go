package jsonscan

import (
	"strings"
	"testing"
)

func TestParseInt(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"-1", -1, true}, {"9223372036854775807", 1<<63 - 1, true},
		{"-9223372036854775808", -1 << 63, true}, {"9223372036854775808", 0, false},
		{"", 0, false}, {"-", 0, false}, {"1a", 0, false}, {"1.5", 0, false}, {"12345678901234567890", 0, false},
	} {
		got, ok := ParseInt([]byte(c.in))
		if got != c.want || ok != c.ok {
			t.Errorf("ParseInt(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestScanString(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in                 string
		end                int
		esc, wide, bad, ok bool
	}{
		{`"abc"x`, 5, false, false, false, true},
		{`"a\"b"`, 6, true, false, false, true},
		{`"é"`, 4, false, true, false, true},
		{`"\u0000"`, 8, true, false, true, true},
		{`"\ud800"`, 8, true, false, true, true},
		{"\"\xff\"", 3, false, true, true, true},
		{`"abc`, 0, false, false, false, false},
		{"\"a\nb\"", 0, false, false, false, false},
	} {
		end, esc, wide, bad, ok := ScanString([]byte(c.in), 0)
		if end != c.end || esc != c.esc || wide != c.wide || bad != c.bad || ok != c.ok {
			t.Errorf("ScanString(%q) = %d %v %v %v %v; want %d %v %v %v %v", c.in, end, esc, wide, bad, ok, c.end, c.esc, c.wide, c.bad, c.ok)
		}
	}
}

func TestSkipValueDepth(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	if _, ok := SkipValue([]byte(deep), 0, 0); ok {
		t.Error("SkipValue followed nesting deeper than MaxDepth")
	}
	shallow := strings.Repeat("[", MaxDepth-1) + strings.Repeat("]", MaxDepth-1)
	if end, ok := SkipValue([]byte(shallow+","), 0, 0); !ok || end != len(shallow) {
		t.Errorf("SkipValue(shallow) = %d, %v", end, ok)
	}
	if got, ok := Unescape([]byte(`a\nb\u00e9\/`)); !ok || got != "a\nbé/" {
		t.Errorf("Unescape = %q, %v", got, ok)
	}
}

// TestRepairEscapes: the escapes ScanString finds bad become \ufffd, in
// strings only, and after the repair ScanString finds none.
func TestRepairEscapes(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`"\u0000"`, `"\ufffd"`},
		{`"a\\u0000"`, `"a\\u0000"`},
		{`"\ud800\udc00"`, `"\ud800\udc00"`},
		{`"\udc00\ud800x"`, `"\ufffd\ufffdx"`},
		{`\u0000 "x" \u0000`, `\u0000 "x" \u0000`},
		{`["\"", "\u0000", "é\u0000"]`, `["\"", "\ufffd", "é\ufffd"]`},
		{`"\u00`, `"\u00`},
	} {
		b := []byte(c.in)
		RepairEscapes(b)
		if string(b) != c.want {
			t.Errorf("RepairEscapes(%s) = %s, want %s", c.in, b, c.want)
		}
		if _, _, _, bad, ok := ScanString(b, 0); ok && bad {
			t.Errorf("RepairEscapes(%s) left a bad string", c.in)
		}
	}
}
