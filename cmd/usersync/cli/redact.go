package cli

import (
	"errors"
	"net/url"
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

// isURLDSN tells the URL form from the keyword/value form, as pgconn does.
func isURLDSN(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

func isPasswordKey(k string) bool { return k == "password" || k == "sslpassword" }

// dsnSecrets finds the passwords of a PostgreSQL connection string without
// parsing it with pgconn, which would read PGPASSWORD and the password file
// and refuse the malformed strings whose errors most need redacting. ok is
// false when the string cannot be read to its end, so that what follows the
// point of failure may hold a password no span covers.
func dsnSecrets(dsn string) (spans []secretSpan, ok bool) {
	if isURLDSN(dsn) {
		return urlSecrets(dsn), true
	}
	return keywordSecrets(dsn)
}

// urlSecrets reads the userinfo and the query of a URL structurally, so a
// URL that does not parse is still redacted. The userinfo ends at the last
// '@' of the authority, as net/url reads it, so a raw '@' in the password
// is masked too.
func urlSecrets(dsn string) []secretSpan {
	var spans []secretSpan
	start := strings.Index(dsn, "://") + 3
	authEnd := len(dsn)
	if i := strings.IndexAny(dsn[start:], "/?#"); i >= 0 {
		authEnd = start + i
	}
	if at := strings.LastIndex(dsn[start:authEnd], "@"); at >= 0 {
		if colon := strings.IndexByte(dsn[start:start+at], ':'); colon >= 0 {
			s, e := start+colon+1, start+at
			spans = append(spans, secretSpan{keyStart: start - 3, start: s, end: e, value: unescape(dsn[s:e], url.PathUnescape)})
		}
	}
	q := strings.IndexByte(dsn[authEnd:], '?')
	if q < 0 {
		return spans
	}
	pos := authEnd + q + 1
	query, _, _ := strings.Cut(dsn[pos:], "#")
	for _, pair := range strings.Split(query, "&") {
		k, v, found := strings.Cut(pair, "=")
		if found && isPasswordKey(unescape(k, url.QueryUnescape)) {
			s := pos + len(k) + 1
			spans = append(spans, secretSpan{keyStart: pos, start: s, end: s + len(v), value: unescape(v, url.QueryUnescape)})
		}
		pos += len(pair) + 1
	}
	return spans
}

func unescape(s string, f func(string) (string, error)) string {
	if u, err := f(s); err == nil {
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

// redactDSN returns dsn with every password value replaced by the mask, the
// rest as written. A keyword/value string that cannot be read to its end is
// replaced whole, since where its password ends is not known.
func redactDSN(dsn string) string {
	spans, ok := dsnSecrets(dsn)
	if !ok {
		return "(not a valid connection string)"
	}
	for i := len(spans) - 1; i >= 0; i-- {
		dsn = dsn[:spans[i].start] + passwordMask + dsn[spans[i].end:]
	}
	return dsn
}

// redactErr removes the password of dsn from an error's text: the whole
// connection string where it is quoted, each password as spelled in it
// (with its keyword, so "password='a'" is masked however short), and a
// decoded password long enough to be told from other text.
func redactErr(err error, dsn string) string {
	msg := err.Error()
	if dsn == "" {
		return msg
	}
	msg = strings.ReplaceAll(msg, dsn, redactDSN(dsn))
	spans, _ := dsnSecrets(dsn)
	for _, s := range spans {
		if s.start == s.end {
			continue
		}
		msg = strings.ReplaceAll(msg, dsn[s.keyStart:s.end], dsn[s.keyStart:s.start]+passwordMask)
		for _, spelled := range []string{dsn[s.start:s.end], s.value} {
			if len(spelled) >= minEchoedPassword {
				msg = strings.ReplaceAll(msg, spelled, passwordMask)
			}
		}
	}
	return msg
}

// parseErrorText is the reason pgconn gives for refusing a connection
// string, without the string: pgconn quotes it with the password masked on
// a best-effort basis that leaves part of a password with an escaped quote
// or a raw '@' in view.
func parseErrorText(err error) string {
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
