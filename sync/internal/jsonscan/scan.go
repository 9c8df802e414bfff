// Package jsonscan is a strict JSON scanner: it validates every byte it
// passes and reports positions, never building values. normalize's single
// pass over a users page and its canonical form of JSON are built on it,
// and the API client finds a document's data member with it.
package jsonscan

import (
	"encoding/binary"
	"math/bits"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth bounds the nesting SkipValue follows (normalize hands deeper
// values to its general decoder).
const MaxDepth = 64

// WS returns the index of the first byte at or after i that is not JSON
// white space.
func WS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// ScanString scans the string at b[i] == '"' and returns the index after
// it, whether it holds an escape, whether it holds bytes above ASCII and
// whether it is bad: it holds something PostgreSQL cannot store (\u0000,
// bytes that are not UTF-8, a UTF-16 surrogate escape not in a pair). It
// refuses anything else at b[i]. The checks cost only on the bytes that
// already leave the fast loop: escapes and bytes above ASCII.
func ScanString(b []byte, i int) (end int, esc, wide, bad, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, false, false, false, false
	}
	j := i + 1
	for {
		j = nextSpecial(b, j)
		if j >= len(b) {
			return 0, false, false, false, false
		}
		switch c := b[j]; {
		case c == '"':
			return j + 1, esc, wide, bad, true
		case c == '\\':
			esc = true
			j++
			if j >= len(b) {
				return 0, false, false, false, false
			}
			switch b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				r, ok := hex4(b, j+1)
				if !ok {
					return 0, false, false, false, false
				}
				j += 4
				switch {
				case r == 0:
					bad = true
				case utf16.IsSurrogate(r):
					// Only a high surrogate escape followed by a low one is
					// a character.
					low, ok := rune(0), false
					if r < 0xdc00 && j+6 < len(b) && b[j+1] == '\\' && b[j+2] == 'u' {
						if low, ok = hex4(b, j+3); !ok {
							return 0, false, false, false, false
						}
					}
					if ok && 0xdc00 <= low && low <= 0xdfff {
						j += 6
					} else {
						bad = true
					}
				}
			default:
				return 0, false, false, false, false
			}
		case c < 0x20:
			return 0, false, false, false, false
		default:
			wide = true
			if r, size := utf8.DecodeRune(b[j:]); r == utf8.RuneError && size == 1 {
				bad = true
			} else {
				j += size - 1
			}
		}
		j++
	}
}

// hex4 returns the value of the four hexadecimal digits at b[i].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, h := range b[i : i+4] {
		if !isHex(h) {
			return 0, false
		}
		r = r<<4 | rune(hexValue(h))
	}
	return r, true
}

// nextSpecial returns the index of the first byte at or after j that is a
// quote, a backslash, a control character or above ASCII, or len(b). It
// looks at eight bytes at a time: in specialBytes' mask, the lowest set bit
// always marks such a byte (a borrow can only set bits above a true match).
func nextSpecial(b []byte, j int) int {
	for ; j+8 <= len(b); j += 8 {
		if m := specialBytes(binary.LittleEndian.Uint64(b[j:])); m != 0 {
			return j + bits.TrailingZeros64(m)>>3
		}
	}
	for ; j < len(b); j++ {
		if c := b[j]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return j
		}
	}
	return j
}

// specialBytes returns a mask with the high bit set in (at least) the
// lowest byte of v that is a quote, a backslash, a control character or
// above ASCII, and 0 when none is.
func specialBytes(v uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	zero := func(x uint64) uint64 { return (x - ones) & ^x & highs }
	return zero(v^(ones*'"')) | zero(v^(ones*'\\')) | (v-ones*0x20)&^v&highs | v&highs
}

// Unescape returns the contents of a JSON string holding escapes, checked by
// ScanString, decoded as gjson decodes them (normalize's general path). It
// reports false for a \u escape of a UTF-16 surrogate, left to gjson.
func Unescape(s []byte) (string, bool) {
	var out strings.Builder // its String does not copy
	out.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			out.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 'b':
			out.WriteByte('\b')
		case 'f':
			out.WriteByte('\f')
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
		case 'u':
			var r rune
			for _, h := range s[i+1 : i+5] {
				r = r<<4 | rune(hexValue(h))
			}
			if utf16.IsSurrogate(r) {
				return "", false
			}
			out.WriteRune(r)
			i += 4
		default: // '"', '\\', '/'
			out.WriteByte(s[i])
		}
	}
	return out.String(), true
}

// ParseInt parses an optional minus sign followed by decimal digits (as
// ScanNumber finds an integer, or an id sent as a string), reporting false
// for anything else or a value that does not fit in an int64, as
// strconv.ParseInt would, without its allocation.
func ParseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 { // 19 digits cannot overflow a uint64
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if !isDigit(c) {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	switch {
	case neg && n <= 1<<63:
		return -int64(n), true
	case !neg && n < 1<<63:
		return int64(n), true
	}
	return 0, false
}

func hexValue(h byte) byte {
	switch {
	case h >= 'a':
		return h - 'a' + 10
	case h >= 'A':
		return h - 'A' + 10
	}
	return h - '0'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// digits returns the index after the digits at b[i].
func digits(b []byte, i int) int {
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	return i
}

// ScanNumber scans the number at b[i] and returns the index after it and
// whether it is written as an integer (no fraction, no exponent).
func ScanNumber(b []byte, i int) (end int, integer, ok bool) {
	j := i
	if j < len(b) && b[j] == '-' {
		j++
	}
	switch {
	case j >= len(b):
		return 0, false, false
	case b[j] == '0':
		j++
	case '1' <= b[j] && b[j] <= '9':
		j = digits(b, j+1)
	default:
		return 0, false, false
	}
	integer = true
	if j < len(b) && b[j] == '.' {
		integer = false
		d := digits(b, j+1)
		if d == j+1 {
			return 0, false, false
		}
		j = d
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		integer = false
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		d := digits(b, j)
		if d == j {
			return 0, false, false
		}
		j = d
	}
	return j, integer, true
}

// Literal checks that b[i:] starts with lit (true, false or null).
func Literal(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, false
	}
	return i + len(lit), true
}

// SkipValue returns the index after the value at b[i], checking its syntax.
// It refuses a bad string (see ScanString) and nesting deeper than MaxDepth:
// see SkipNested.
func SkipValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		end, _, _, bad, ok := ScanString(b, i)
		return end, ok && !bad
	case '{':
		if depth >= MaxDepth {
			return 0, false
		}
		return Members(b, i, func(_ []byte, _ bool, _, v int) (int, bool) { return SkipValue(b, v, depth+1) })
	case '[':
		if depth >= MaxDepth {
			return 0, false
		}
		return Elements(b, i, func(v int) (int, bool) { return SkipValue(b, v, depth+1) })
	case 't':
		return Literal(b, i, "true")
	case 'f':
		return Literal(b, i, "false")
	case 'n':
		return Literal(b, i, "null")
	}
	end, _, ok := ScanNumber(b, i)
	return end, ok
}

// Members walks the object at b[i] == '{', refusing a bad key (see
// ScanString). For each member it calls f with
// the key's contents, whether the key is plain (no escape, ASCII only), the
// index of the key's opening quote and the index of the value; f returns
// the index after the value. Members returns the index after the object.
func Members(b []byte, i int, f func(key []byte, plain bool, k, v int) (int, bool)) (int, bool) {
	i = WS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, false
		}
		end, esc, wide, bad, ok := ScanString(b, i)
		if !ok || bad {
			return 0, false
		}
		k := i
		i = WS(b, end)
		if i >= len(b) || b[i] != ':' {
			return 0, false
		}
		i = WS(b, i+1)
		if i >= len(b) {
			return 0, false
		}
		if i, ok = f(b[k+1:end-1], !esc && !wide, k, i); !ok {
			return 0, false
		}
		i = WS(b, i)
		if i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case ',':
			i = WS(b, i+1)
		case '}':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// Elements walks the array at b[i] == '[', calling f with the index of each
// element; f returns the index after it. Elements returns the index after
// the array.
func Elements(b []byte, i int, f func(v int) (int, bool)) (int, bool) {
	i = WS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, true
	}
	for {
		if i >= len(b) {
			return 0, false
		}
		var ok bool
		if i, ok = f(i); !ok {
			return 0, false
		}
		i = WS(b, i)
		if i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case ',':
			i = WS(b, i+1)
		case ']':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// SkipNested returns the index after the value at b[i], checking its syntax
// as SkipValue does, but at any depth and whatever its strings hold. It also
// returns the depth of the value (the most containers around a point of it:
// 0 for a scalar, 1 for [] or {"a":1}) and whether a string in it
// is bad (see ScanString). It keeps the open brackets in a slice, not on the
// stack: a body of a million brackets costs a megabyte, not a goroutine's
// stack.
func SkipNested(b []byte, i int) (end, depth int, bad, ok bool) {
	var open []byte // the brackets of the containers around b[i]
	var buf [64]byte
	open = buf[:0]
	for {
		// A value at b[i].
		if i >= len(b) {
			return 0, 0, false, false
		}
		switch c := b[i]; c {
		case '{', '[':
			open = append(open, c)
			depth = max(depth, len(open))
			i = WS(b, i+1)
			if i < len(b) && (c == '[' && b[i] == ']' || c == '{' && b[i] == '}') {
				open = open[:len(open)-1]
				i++
				break
			}
			if c == '{' {
				if i, ok = skipKey(b, i, &bad); !ok {
					return 0, 0, false, false
				}
			}
			continue
		case '"':
			end, _, _, sbad, ok := ScanString(b, i)
			if !ok {
				return 0, 0, false, false
			}
			bad = bad || sbad
			i = end
		case 't':
			i, ok = Literal(b, i, "true")
		case 'f':
			i, ok = Literal(b, i, "false")
		case 'n':
			i, ok = Literal(b, i, "null")
		default:
			i, _, ok = ScanNumber(b, i)
		}
		if !ok {
			return 0, 0, false, false
		}
		// After a value: close containers, or go on to the next member.
		for {
			if len(open) == 0 {
				return i, depth, bad, true
			}
			i = WS(b, i)
			if i >= len(b) {
				return 0, 0, false, false
			}
			top := open[len(open)-1]
			if b[i] == ',' {
				i = WS(b, i+1)
				if top == '{' {
					if i, ok = skipKey(b, i, &bad); !ok {
						return 0, 0, false, false
					}
				}
				break
			}
			if top == '[' && b[i] == ']' || top == '{' && b[i] == '}' {
				open = open[:len(open)-1]
				i++
				continue
			}
			return 0, 0, false, false
		}
	}
}

// skipKey skips an object key and its colon at b[i], returning the index of
// the value; a bad key sets *bad.
func skipKey(b []byte, i int, bad *bool) (int, bool) {
	end, _, _, kbad, ok := ScanString(b, i)
	if !ok {
		return 0, false
	}
	*bad = *bad || kbad
	i = WS(b, end)
	if i >= len(b) || b[i] != ':' {
		return 0, false
	}
	return WS(b, i+1), true
}
