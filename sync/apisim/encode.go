package apisim

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// The simulator writes every response by hand into an append-style byte
// buffer: encoding/json (or reflection of any kind) would make the fake, not
// the client under test, the bottleneck of a benchmark.

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string literal. Unlike strconv.AppendQuote
// the result is valid JSON for every input: control characters become \n, \t
// or \u00XX, invalid UTF-8 becomes \ufffd (as encoding/json does), U+2028 and
// U+2029 are escaped so the body is also safe JavaScript, and every other
// character is copied as UTF-8.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = appendEscaped(dst, s)
	return append(dst, '"')
}

// appendEscaped appends the escaped contents of a JSON string, without the
// surrounding quotes. Runs of safe ASCII are copied in one append.
func appendEscaped(dst []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}

// appendInt appends a decimal integer.
func appendInt(dst []byte, n int64) []byte { return strconv.AppendInt(dst, n, 10) }

// appendBool appends true or false.
func appendBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, "true"...)
	}
	return append(dst, "false"...)
}

// appendID appends a resource id: a JSON number, or a numeric string when
// the StringIDs knob is on.
func appendID(dst []byte, id uint32, asString bool) []byte {
	if asString {
		dst = append(dst, '"')
		dst = strconv.AppendUint(dst, uint64(id), 10)
		return append(dst, '"')
	}
	return strconv.AppendUint(dst, uint64(id), 10)
}

// appendMillis appends the instant ms (Unix milliseconds) as a quoted
// RFC 3339 timestamp in UTC with exactly three fractional digits, the form
// the API sends: "2024-05-01T12:34:56.789Z". It is about ten times faster than
// time.Time.AppendFormat, which matters at five timestamps per user.
func appendMillis(dst []byte, ms int64) []byte {
	dst = append(dst, '"')
	dst = appendMillisRaw(dst, ms)
	return append(dst, '"')
}

// appendMillisRaw is appendMillis without the quotes.
func appendMillisRaw(dst []byte, ms int64) []byte {
	const pairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"
	days := floorDiv(ms, 86_400_000)
	rem := ms - days*86_400_000
	y, m, d := civilFromDays(days)
	sec := rem / 1000
	frac := rem % 1000
	b := [24]byte{4: '-', 7: '-', 10: 'T', 13: ':', 16: ':', 19: '.', 23: 'Z'}
	put := func(at int, n int64) { b[at], b[at+1] = pairs[2*n], pairs[2*n+1] }
	put(0, y/100%100)
	put(2, y%100)
	put(5, m)
	put(8, d)
	put(11, sec/3600)
	put(14, sec/60%60)
	put(17, sec%60)
	b[20] = byte('0' + frac/100)
	put(21, frac%100)
	return append(dst, b[:]...)
}

// formatMillis returns the unquoted timestamp of appendMillisRaw.
func formatMillis(ms int64) string { return string(appendMillisRaw(make([]byte, 0, 24), ms)) }

// appendDigits appends n zero-padded to width digits (n is non-negative).
func appendDigits(dst []byte, n int64, width int) []byte {
	var b [20]byte
	i := len(b)
	for n > 0 || width > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		width--
	}
	return append(dst, b[i:]...)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// civilFromDays converts days since 1970-01-01 to a proleptic Gregorian date
// (Howard Hinnant's algorithm).
func civilFromDays(z int64) (y, m, d int64) {
	z += 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	if mp < 10 {
		m = mp + 3
	} else {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

// parseTimestamp parses a filter or cursor timestamp into Unix milliseconds.
// It accepts RFC 3339 with up to millisecond precision and a bare date
// (midnight UTC); finer precision is refused, as the real API refuses it.
func parseTimestamp(s string) (int64, bool) {
	if len(s) == len("2006-01-02") {
		t, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return 0, false
		}
		return t.UnixMilli(), true
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, false
	}
	if t.Nanosecond()%int(time.Millisecond) != 0 {
		return 0, false
	}
	return t.UnixMilli(), true
}
