package warehouse

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/usersync/usersync/sync/internal/jsonscan"
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
	b := bytes.ToValidUTF8(raw, []byte("\uFFFD")) // a copy: raw stays
	jsonscan.RepairEscapes(b)
	if end, depth, _, ok := jsonscan.SkipNested(b, jsonscan.WS(b, 0)); ok && depth <= maxRawNesting && jsonscan.WS(b, end) == len(b) {
		return b
	}
	s, err := json.Marshal(string(bytes.ReplaceAll(b, []byte{0}, []byte("\uFFFD"))))
	if err != nil {
		return []byte("null") // never: a string always encodes
	}
	return s
}
