package warehouse

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxErrorText is the most bytes of error text CleanText keeps, marker
// included: an error can quote an API's response, which is not ours to size.
const MaxErrorText = 2048

// CleanText makes untrusted text (an error quoting an API's or a server's
// words) safe to store in a text column and to print on a terminal: invalid
// UTF-8 becomes U+FFFD, line breaks and tabs become spaces, other control
// characters (NUL, which PostgreSQL refuses in text; ESC, which starts
// terminal escape sequences) and bidirectional overrides are dropped, and the
// result is cut to MaxErrorText bytes with a marker saying so.
func CleanText(s string) string {
	var b strings.Builder
	b.Grow(min(len(s), MaxErrorText))
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			r = ' '
		case unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r):
			continue
		}
		if b.Len()+utf8.RuneLen(r) > MaxErrorText {
			return truncated(b.String(), len(s))
		}
		b.WriteRune(r) // an invalid byte arrives as utf8.RuneError and is written as U+FFFD
	}
	return b.String()
}

// truncated cuts clean text so that it and the marker fit in MaxErrorText.
func truncated(clean string, total int) string {
	marker := fmt.Sprintf(" …[truncated; %d bytes in all]", total)
	cut := MaxErrorText - len(marker)
	for cut > 0 && !utf8.RuneStart(clean[cut]) {
		cut--
	}
	return clean[:cut] + marker
}
