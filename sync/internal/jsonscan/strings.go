package jsonscan

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// ScanString scans the string at b[i] == '"', returning the index after it
// and whether it holds an escape, bytes above ASCII, or what PostgreSQL
// cannot store (bad: \u0000, invalid UTF-8, a lone surrogate). Plain strings
// never leave the fast loop.
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
			var ebad bool
			if j, ebad, ok = scanEscape(b, j+1); !ok {
				return 0, false, false, false, false
			}
			bad = bad || ebad
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

// scanEscape checks the escape whose letter is at b[j] (after the
// backslash) and returns the index of its last byte and whether it is bad
// (\u0000, or a UTF-16 surrogate escape not in a pair).
func scanEscape(b []byte, j int) (last int, bad, ok bool) {
	if j >= len(b) {
		return 0, false, false
	}
	switch b[j] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return j, false, true
	case 'u':
	default:
		return 0, false, false
	}
	r, ok := hex4(b, j+1)
	if !ok {
		return 0, false, false
	}
	j += 4
	switch {
	case r == 0:
		return j, true, true
	case utf16.IsSurrogate(r):
		// Only a high surrogate escape followed by a low one is a
		// character.
		low, ok := rune(0), false
		if r < 0xdc00 && j+6 < len(b) && b[j+1] == '\\' && b[j+2] == 'u' {
			if low, ok = hex4(b, j+3); !ok {
				return 0, false, false
			}
		}
		if ok && 0xdc00 <= low && low <= 0xdfff {
			return j + 6, false, true
		}
		return j, true, true
	}
	return j, false, true
}

// RepairEscapes replaces, in place, each escape of b's strings that makes
// a string bad (see ScanString: \u0000, a UTF-16 surrogate escape not in a
// pair) by \ufffd, of the same length. b need not be valid JSON: its
// strings are found by their quotes, and a malformed escape is left as it
// is.
func RepairEscapes(b []byte) {
	for j := 0; j < len(b); j++ {
		q := bytes.IndexByte(b[j:], '"') // the next string's opening quote
		if q < 0 {
			return
		}
		for j += q + 1; j < len(b); j++ {
			if j = nextSpecial(b, j); j >= len(b) || b[j] == '"' {
				break // the string's closing quote, or the end
			}
			if b[j] != '\\' {
				continue // a control byte or one above ASCII
			}
			last, bad, ok := scanEscape(b, j+1)
			switch {
			case bad:
				copy(b[j:], `\ufffd`) // a bad escape is six bytes: \uXXXX
				j = last
			case ok:
				j = last
			default:
				j++ // the escaped byte, as the JSON decoder would take it
			}
		}
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
