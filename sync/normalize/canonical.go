package normalize

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/usersync/usersync/sync/internal/jsonscan"
)

// CanonicalJSON re-encodes a JSON value with sorted keys and no spaces,
// exactly as encoding/json would, so the same value hashes the same whether
// it came from the API or from PostgreSQL's jsonb. Invalid JSON is returned
// as is.
func CanonicalJSON(b []byte) []byte {
	return appendCanonical(make([]byte, 0, len(b)), b)
}

// appendCanonical appends CanonicalJSON(b) to dst.
func appendCanonical(dst, b []byte) []byte {
	if out, end, ok := appendCanonicalAt(dst, b, jsonscan.WS(b, 0), 0); ok && jsonscan.WS(b, end) == len(b) {
		return out
	}
	return append(dst, canonicalSlow(b)...)
}

// appendCanonicalAt appends the value at b[i] encoded as encoding/json
// would, using the page scanner, and returns the index after it; it
// reports false for anything it does not reproduce (escapes, non-ASCII or
// HTML characters in strings, repeated keys, deep nesting, invalid JSON),
// which encoding/json then decides.
func appendCanonicalAt(dst, b []byte, i, depth int) ([]byte, int, bool) {
	if i >= len(b) || depth >= jsonscan.MaxDepth {
		return dst, 0, false
	}
	switch b[i] {
	case '"':
		end, esc, _, _, ok := jsonscan.ScanString(b, i)
		if !ok || esc || !plainString(string(b[i:end])) {
			return dst, 0, false
		}
		return append(dst, b[i:end]...), end, true
	case 't':
		end, ok := jsonscan.Literal(b, i, "true")
		return append(dst, "true"...), end, ok
	case 'f':
		end, ok := jsonscan.Literal(b, i, "false")
		return append(dst, "false"...), end, ok
	case 'n':
		end, ok := jsonscan.Literal(b, i, "null")
		return append(dst, "null"...), end, ok
	case '[':
		return appendCanonicalArray(dst, b, i, depth)
	case '{':
		return appendCanonicalObject(dst, b, i, depth)
	}
	return appendCanonicalNumber(dst, b, i)
}

func appendCanonicalArray(dst, b []byte, i, depth int) ([]byte, int, bool) {
	dst = append(dst, '[')
	first := true
	end, ok := jsonscan.Elements(b, i, func(v int) (int, bool) {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		var end int
		var ok bool
		dst, end, ok = appendCanonicalAt(dst, b, v, depth+1)
		return end, ok
	})
	return append(dst, ']'), end, ok
}

// appendCanonicalObject appends the object at b[i] with its members sorted
// by key; it refuses a key that is not plain or that repeats.
func appendCanonicalObject(dst, b []byte, i, depth int) ([]byte, int, bool) {
	type member struct {
		key   []byte // the key's contents
		value int    // the index of the value
	}
	var buf [8]member // objects of a few members need no allocation
	ms := buf[:0]
	end, ok := jsonscan.Members(b, i, func(key []byte, plain bool, k, v int) (int, bool) {
		if !plain || !plainString(string(b[k:k+len(key)+2])) {
			return 0, false
		}
		for _, m := range ms {
			if bytes.Equal(m.key, key) {
				return 0, false
			}
		}
		ms = append(ms, member{key, v})
		return jsonscan.SkipValue(b, v, depth+1)
	})
	if !ok {
		return dst, 0, false
	}
	slices.SortFunc(ms, func(x, y member) int { return bytes.Compare(x.key, y.key) })
	dst = append(dst, '{')
	for j, m := range ms {
		if j > 0 {
			dst = append(dst, ',')
		}
		dst = append(append(append(append(dst, '"'), m.key...), '"'), ':')
		if dst, _, ok = appendCanonicalAt(dst, b, m.value, depth+1); !ok {
			return dst, 0, false
		}
	}
	return append(dst, '}'), end, true
}

// appendCanonicalNumber appends the number at b[i] as encoding/json prints
// a float64.
func appendCanonicalNumber(dst, b []byte, i int) ([]byte, int, bool) {
	end, integer, ok := jsonscan.ScanNumber(b, i)
	if !ok {
		return dst, 0, false
	}
	digits := end - i
	if b[i] == '-' {
		digits--
	}
	if integer && digits <= 15 {
		// At most 15 digits: exact as a float64, printed back the same.
		return append(dst, b[i:end]...), end, true
	}
	f, err := strconv.ParseFloat(string(b[i:end]), 64)
	if err != nil {
		return dst, 0, false
	}
	return appendFloat(dst, f), end, true
}

func canonicalSlow(b []byte) []byte {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return b
	}
	out, err := json.Marshal(v)
	if err != nil {
		return b
	}
	return out
}

// plainString reports whether a raw JSON string ("...") holds only text
// that encoding/json writes back unchanged: printable ASCII or valid UTF-8,
// no escapes, no quote, none of the HTML characters it escapes, and neither
// U+2028 nor U+2029 (which it escapes too).
func plainString(raw string) bool {
	if len(raw) < 2 {
		return false
	}
	wide := false
	for i := 1; i < len(raw)-1; i++ {
		c := raw[i]
		if c < 0x20 || c == 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
		wide = wide || c > 0x7f
	}
	if !wide {
		return true
	}
	inner := raw[1 : len(raw)-1]
	return utf8.ValidString(inner) && !strings.Contains(inner, "\u2028") && !strings.Contains(inner, "\u2029")
}

// appendFloat formats f as encoding/json does for a float64.
func appendFloat(dst []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}
