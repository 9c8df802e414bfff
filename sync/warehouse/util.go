package warehouse

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxQuarantineID bounds a quarantine record's resource_id: an id is what
// the API sent, which may be thousands of characters, and the column is
// indexed (a btree entry holds at most some 2.7 kB).
const maxQuarantineID = 64

// maxRawNesting bounds the nesting of a quarantine record's raw kept as
// JSON: PostgreSQL's jsonb parser runs out of stack beyond some 10,000
// levels. A resource nested deeper is kept as a JSON string.
const maxRawNesting = 1000

// Storable returns q as PostgreSQL can store it and a terminal can show it:
// its text without NUL and in UTF-8, its field and error also without
// control characters and at most MaxErrorText bytes, its resource_id
// bounded, its raw valid jsonb. The quarantine is
// where resources that cannot be stored go: it must hold any of them.
func (q Quarantined) Storable() Quarantined {
	q.Type = storableText(q.Type)
	q.ID = storableID(q.ID)
	q.Field = CleanText(storableText(q.Field))
	q.Error = CleanText(storableText(q.Error))
	q.Raw = sanitizeJSON(q.Raw)
	return q
}

// storableText replaces NULs (as the six characters \u0000, so the text
// still says what was sent) and bytes that are not UTF-8 (by U+FFFD).
func storableText(s string) string {
	if strings.IndexByte(s, 0) < 0 && utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", `\u0000`), "\uFFFD")
}

// storableID is storableText bounded to maxQuarantineID bytes: a longer id
// keeps its first characters and the SHA-256 of the whole, so two ids stay
// apart.
func storableID(id string) string {
	s := storableText(id)
	if len(s) <= maxQuarantineID {
		return s
	}
	sum := sha256.Sum256([]byte(id))
	suffix := "..." + hex.EncodeToString(sum[:8])
	cut := maxQuarantineID - len(suffix)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + suffix
}

// sanitizeJSON makes a raw resource storable in jsonb. PostgreSQL refuses
// the escape \u0000, UTF-16 surrogate escapes not in a pair and bytes that
// are not UTF-8: they become the replacement character (the quarantine
// error says what the original held). Raw that is not JSON, or is nested
// deeper than maxRawNesting, is kept as a JSON string.
func sanitizeJSON(raw []byte) []byte {
	if len(raw) == 0 {
		return []byte("null")
	}
	b := bytes.ToValidUTF8(raw, []byte("\uFFFD"))
	if depth := replaceEscapes(b); depth <= maxRawNesting && json.Valid(b) {
		return b
	}
	s, err := json.Marshal(string(bytes.ReplaceAll(b, []byte{0}, []byte("\uFFFD"))))
	if err != nil {
		return []byte("null") // never: a string always encodes
	}
	return s
}

// replaceEscapes replaces, in place, the escapes jsonb refuses in the JSON
// strings of b (\u0000 and surrogates not in a pair) by \ufffd, of the same
// length, and returns the greatest nesting of b outside strings.
func replaceEscapes(b []byte) int {
	depth, deepest, inString := 0, 0, false
	hex4 := func(i int) rune {
		if i+4 > len(b) || b[i-2] != '\\' || b[i-1] != 'u' {
			return -1
		}
		var r rune
		for _, c := range b[i : i+4] {
			var v byte
			switch {
			case '0' <= c && c <= '9':
				v = c - '0'
			case 'a' <= c && c <= 'f':
				v = c - 'a' + 10
			case 'A' <= c && c <= 'F':
				v = c - 'A' + 10
			default:
				return -1
			}
			r = r<<4 | rune(v)
		}
		return r
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inString && c == '\\' && i+1 < len(b) && b[i+1] == 'u':
			r := hex4(i + 2)
			switch {
			case r == 0:
				copy(b[i:], `\ufffd`)
			case r >= 0xd800 && r < 0xdc00 && i+7 < len(b) && hex4(i+8) >= 0xdc00 && hex4(i+8) <= 0xdfff:
				i += 6 // a pair
			case r >= 0 && utf16.IsSurrogate(r):
				copy(b[i:], `\ufffd`)
			}
			if r >= 0 {
				i += 5
			}
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}
