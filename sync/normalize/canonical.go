package normalize

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// CanonicalJSON re-encodes a JSON value with sorted keys and no spaces, so
// the same value hashes the same whether it came from the API or from
// PostgreSQL's jsonb output. The result is exactly what encoding/json gives
// for the value decoded into an any and encoded again (numbers as float64,
// the last of repeated keys, HTML characters escaped); invalid JSON is
// returned as is.
//
// Values whose strings are plain printable ASCII take a fast path that
// never builds maps (a user's data connections are re-encoded on every
// page); anything else goes through encoding/json.
func CanonicalJSON(b []byte) []byte {
	if !gjson.ValidBytes(b) {
		return b
	}
	if out, ok := appendCanonical(make([]byte, 0, len(b)), gjson.ParseBytes(b)); ok {
		return out
	}
	return canonicalSlow(b)
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

// appendCanonical appends v encoded as encoding/json would, or reports
// false when v holds something the fast path does not reproduce.
func appendCanonical(dst []byte, v gjson.Result) ([]byte, bool) {
	switch v.Type {
	case gjson.Null:
		return append(dst, "null"...), true
	case gjson.True:
		return append(dst, "true"...), true
	case gjson.False:
		return append(dst, "false"...), true
	case gjson.Number:
		f, err := strconv.ParseFloat(v.Raw, 64)
		if err != nil {
			return dst, false
		}
		return appendFloat(dst, f), true
	case gjson.String:
		if !plainString(v.Raw) {
			return dst, false
		}
		return append(dst, v.Raw...), true
	}
	if v.IsArray() {
		dst = append(dst, '[')
		ok := true
		first := true
		v.ForEach(func(_, e gjson.Result) bool {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst, ok = appendCanonical(dst, e)
			return ok
		})
		return append(dst, ']'), ok
	}
	type member struct{ key, value gjson.Result }
	var members []member
	ok := true
	v.ForEach(func(k, e gjson.Result) bool {
		if !plainString(k.Raw) {
			ok = false
			return false
		}
		for i := range members {
			if members[i].key.Raw == k.Raw {
				members[i].value = e // the last one wins, as in a map
				return true
			}
		}
		members = append(members, member{k, e})
		return true
	})
	if !ok {
		return dst, false
	}
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.key.Str, b.key.Str) })
	dst = append(dst, '{')
	for i, m := range members {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(append(dst, m.key.Raw...), ':')
		if dst, ok = appendCanonical(dst, m.value); !ok {
			return dst, false
		}
	}
	return append(dst, '}'), true
}

// plainString reports whether a raw JSON string ("...") holds only
// printable ASCII that encoding/json writes back unchanged: no escapes, no
// quote, and none of the HTML characters it escapes.
func plainString(raw string) bool {
	if len(raw) < 2 {
		return false
	}
	for i := 1; i < len(raw)-1; i++ {
		c := raw[i]
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
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
