// Package dsn keeps a PostgreSQL connection string's passwords out of what usersync
// prints: the string redacted, or described, and errors about it cleaned.
package dsn

import (
	"errors"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// passwordMask replaces a password wherever usersync prints a connection
// string or an error about one.
const passwordMask = "xxxxx"

// minEchoedPassword is the shortest decoded password searched for in free
// text. A shorter one cannot be told from ordinary letters: masking every
// "a" of a message garbles it and, worse, shows what the password is.
const minEchoedPassword = 4

// secretSpan is where a connection string spells a password: the value from
// start to end (quotes and escapes included), what leads to it from keyStart
// (its keyword, or a URL's "://user:"), and the password it stands for.
type secretSpan struct {
	keyStart, start, end int
	value                string
}

// IsURL tells the URL form from the keyword/value form, as pgconn does.
func IsURL(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

func isPasswordKey(k string) bool { return k == "password" || k == "sslpassword" }

// dsnSecrets finds the passwords of a PostgreSQL connection string without
// parsing it with pgconn, which would read PGPASSWORD and the password file
// and refuse the malformed strings whose errors most need redacting. ok is
// false when the string cannot be read to its end, so that what follows the
// point of failure may hold a password no span covers.
func dsnSecrets(dsn string) (spans []secretSpan, ok bool) {
	if IsURL(dsn) {
		return urlSecrets(dsn), true
	}
	return keywordSecrets(dsn)
}

// urlSecrets reads the userinfo and the query of a URL the way pgconn's
// parseURLSettings does, so a URL that does not parse is still redacted:
// only a '/' ends the userinfo's search for its '@' ('?' and '#' do not:
// pgconn takes them for letters of the password), and the query runs from
// the first '?' after the userinfo to the end, '#' included. The masked
// span of the userinfo's password runs to the last '@' before the path
// (net/url's reading, which also covers pgconn's first '@'), unless a '?'
// lies between them.
func urlSecrets(dsn string) []secretSpan {
	var spans []secretSpan
	start := strings.Index(dsn, "://") + 3
	authEnd := len(dsn)
	if i := strings.IndexByte(dsn[start:], '/'); i >= 0 {
		authEnd = start + i
	}
	rest := start
	if first := strings.IndexByte(dsn[start:authEnd], '@'); first >= 0 {
		first += start
		end := start + strings.LastIndexByte(dsn[start:authEnd], '@')
		if strings.IndexByte(dsn[first:end], '?') >= 0 {
			end = first
		}
		if colon := strings.IndexByte(dsn[start:first], ':'); colon >= 0 {
			s := start + colon + 1
			spans = append(spans, secretSpan{keyStart: start - 3, start: s, end: end, value: uriDecode(dsn[s:first])})
		}
		rest = end + 1
	}
	q := strings.IndexByte(dsn[rest:], '?')
	if q < 0 {
		return spans
	}
	pos := rest + q + 1
	for _, pair := range strings.Split(dsn[pos:], "&") {
		k, v, found := strings.Cut(pair, "=")
		if found && isPasswordKey(uriDecode(k)) {
			s := pos + len(k) + 1
			spans = append(spans, secretSpan{keyStart: pos, start: s, end: s + len(v), value: uriDecode(v)})
		}
		pos += len(pair) + 1
	}
	return spans
}

// uriDecode decodes a URL component as pgconn does: spaces around it are
// dropped, %XX is decoded and '+' stays a '+'.
func uriDecode(s string) string {
	s = strings.Trim(s, " ")
	if u, err := url.PathUnescape(s); err == nil {
		return u
	}
	return s
}

// keywordSecrets reads a keyword/value string the way libpq (and pgconn's
// parseKeywordValueSettings) does: a value is a run of non-spaces, or
// single-quoted; in both, a backslash takes the next character literally.
func keywordSecrets(dsn string) ([]secretSpan, bool) {
	var spans []secretSpan
	const space = " \t\n\r\v\f"
	i := 0
	skip := func() {
		for i < len(dsn) && strings.IndexByte(space, dsn[i]) >= 0 {
			i++
		}
	}
	for skip(); i < len(dsn); skip() {
		keyStart := i
		eq := strings.IndexByte(dsn[i:], '=')
		if eq < 0 {
			return spans, false
		}
		key := strings.Trim(dsn[i:i+eq], space)
		i += eq + 1
		skip()
		start := i
		var val strings.Builder
		switch {
		case i == len(dsn):
		case dsn[i] != '\'':
			for i < len(dsn) && strings.IndexByte(space, dsn[i]) < 0 {
				if dsn[i] == '\\' {
					if i++; i == len(dsn) {
						break // a trailing backslash is dropped
					}
				}
				val.WriteByte(dsn[i])
				i++
			}
		default:
			for i++; i >= len(dsn) || dsn[i] != '\''; i++ {
				if i < len(dsn) && dsn[i] == '\\' {
					i++
				}
				if i >= len(dsn) {
					return spans, false // unterminated quote
				}
				val.WriteByte(dsn[i])
			}
			i++ // the closing quote
		}
		if isPasswordKey(key) {
			spans = append(spans, secretSpan{keyStart: keyStart, start: start, end: i, value: val.String()})
		}
	}
	return spans, true
}

// driverPassword is the password pgconn itself reads for dsn (from the
// string, PGPASSWORD or the password file), or "" when it reads none or
// refuses the string. It checks the structural reading above: whatever the
// driver takes for the password is masked wherever it appears, even if a
// future driver reads the string differently.
func driverPassword(dsn string) string {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return ""
	}
	return cfg.Password
}

// spellings are the ways a password may be written in a connection string
// or an error: as is and percent-encoded.
func spellings(secret string) []string {
	return []string{secret, url.PathEscape(secret), url.QueryEscape(secret)}
}

// HasPassword says whether dsn spells a password (or an sslpassword)
// in itself, as the structural reading or pgconn reads it; a string that
// cannot be read to its end is taken to hold one.
func HasPassword(dsn string) bool {
	spans, ok := dsnSecrets(dsn)
	if !ok || slices.ContainsFunc(spans, func(s secretSpan) bool { return s.start < s.end }) {
		return true
	}
	pw := driverPassword(dsn)
	return pw != "" && slices.ContainsFunc(spellings(pw), func(spelled string) bool { return strings.Contains(dsn, spelled) })
}

// Redact returns dsn with every password value replaced by the mask, the
// rest as written. A keyword/value string that cannot be read to its end is
// replaced whole, since where its password ends is not known; so is a
// string in which the password the driver reads would still show (only the
// host, port, database and user are printed then).
func Redact(dsn string) string {
	spans, ok := dsnSecrets(dsn)
	if !ok {
		return "(not a valid connection string)"
	}
	masked := dsn
	for i := len(spans) - 1; i >= 0; i-- {
		masked = masked[:spans[i].start] + passwordMask + masked[spans[i].end:]
	}
	if pw := driverPassword(dsn); pw != "" && !slices.ContainsFunc(spans, func(s secretSpan) bool { return s.value == pw }) {
		for _, spelled := range spellings(pw) {
			if strings.Contains(masked, spelled) {
				return describeDSN(dsn)
			}
		}
	}
	return masked
}

// describeDSN names where dsn connects, as a URL without its password, for
// a string whose password could not be cut out of it.
func describeDSN(dsn string) string {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return "(not a valid connection string)"
	}
	u := url.URL{Scheme: "postgres", User: url.UserPassword(cfg.User, passwordMask),
		Host: net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), Path: "/" + cfg.Database}
	return u.String()
}

// RedactErr removes the password of dsn from an error's text: the whole
// connection string where it is quoted, each password as spelled in it
// (with its keyword, so "password='a'" is masked however short), and a
// decoded password, or the one the driver reads, long enough to be told
// from other text.
func RedactErr(err error, dsn string) string {
	msg := err.Error()
	if dsn == "" {
		return msg
	}
	msg = strings.ReplaceAll(msg, dsn, Redact(dsn))
	spans, _ := dsnSecrets(dsn)
	var secrets []string
	for _, s := range spans {
		if s.start == s.end {
			continue
		}
		msg = strings.ReplaceAll(msg, dsn[s.keyStart:s.end], dsn[s.keyStart:s.start]+passwordMask)
		secrets = append(secrets, dsn[s.start:s.end], s.value)
	}
	if pw := driverPassword(dsn); pw != "" {
		secrets = append(secrets, spellings(pw)...)
	}
	for _, spelled := range secrets {
		if len(spelled) >= minEchoedPassword {
			msg = strings.ReplaceAll(msg, spelled, passwordMask)
		}
	}
	return msg
}

// ParseErrorText is the reason pgconn gives for refusing a connection
// string, without the string: pgconn quotes it with the password masked on
// a best-effort basis that leaves part of a password with an escaped quote
// or a raw '@' in view.
func ParseErrorText(err error) string {
	var perr *pgconn.ParseConfigError
	if !errors.As(err, &perr) {
		return err.Error()
	}
	if perr.Unwrap() != nil {
		return perr.Unwrap().Error()
	}
	msg := perr.Error()
	if i := strings.LastIndex(msg, "`: "); i >= 0 {
		return msg[i+3:]
	}
	return "invalid connection string"
}
