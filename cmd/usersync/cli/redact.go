package cli

import (
	"net/url"
	"strings"
)

// passwordOf returns the password a PostgreSQL URL or keyword/value string
// carries, so it can be masked wherever it might be echoed.
func passwordOf(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		if pw, ok := u.User.Password(); ok {
			return pw
		}
		return u.Query().Get("password")
	}
	for _, f := range strings.Fields(dsn) {
		if v, ok := strings.CutPrefix(f, "password="); ok {
			return strings.Trim(v, "'")
		}
	}
	return ""
}

func replaceAll(s, old, repl string) string {
	if old == "" {
		return s
	}
	return strings.ReplaceAll(s, old, repl)
}
