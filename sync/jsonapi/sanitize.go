package jsonapi

import (
	"errors"
	"net/url"
	"strings"
)

// sanitizeURL returns raw without userinfo or fragment, and with every query
// parameter the client does not send itself (sentParam) replaced by
// REDACTED, name and value: what a server adds to a link is unknown, so it
// is never written to a log or an error, whatever its name. The parameters
// the client sends keep their raw form. A URL that does not parse is
// reduced to a placeholder.
func sanitizeURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	u.Fragment, u.RawFragment = "", ""
	if u.RawQuery != "" {
		u.RawQuery = redactQuery(u.RawQuery)
	}
	return u.String()
}

// redactQuery replaces each parameter of a raw query that sentParam does not
// allow by REDACTED, and the value of one it allows by REDACTED when the
// client would not have built it (valueShaped): a server may put any text
// under a name the client uses.
func redactQuery(rawQuery string) string {
	parts := strings.Split(rawQuery, "&")
	for i, part := range parts {
		if part == "" {
			continue
		}
		rawName, rawValue, _ := strings.Cut(part, "=")
		name, err := url.QueryUnescape(rawName)
		switch {
		case err != nil || !sentParam(name):
			parts[i] = "REDACTED"
		case !shapedRaw(name, rawValue):
			parts[i] = rawName + "=REDACTED"
		}
	}
	return strings.Join(parts, "&")
}

// shapedRaw is valueShaped for a raw (escaped) value.
func shapedRaw(name, rawValue string) bool {
	v, err := url.QueryUnescape(rawValue)
	return err == nil && valueShaped(name, v)
}

// sentParams are the query parameters the client sends itself (Query's) and
// the cursors of the API's next links; sentParam adds filter[...] and
// fields[...].
var sentParams = map[string]bool{
	"count": true, "sort": true, "include": true, "page[size]": true, "page[after]": true, "page[offset]": true,
	"provideDataConnections": true, "provideAuthorizationMeta": true,
}

// sentParam reports whether name is a query parameter the client sends:
// one of sentParams, filter[attr], filter[rel][id] or fields[type], with
// attr, rel and type plain identifiers. It is an allow-list: a parameter a
// server adds to a link (a token, a session, a signature), whatever it is
// called, is not one.
func sentParam(name string) bool {
	if sentParams[name] {
		return true
	}
	if rest, ok := strings.CutPrefix(name, "fields["); ok {
		rest, ok = cutIdent(rest)
		return ok && rest == ""
	}
	if rest, ok := strings.CutPrefix(name, "filter["); ok {
		rest, ok = cutIdent(rest)
		return ok && (rest == "" || rest == "[id]")
	}
	return false
}

// cutIdent cuts "ident]" from the start of s, ident being a letter followed
// by at most 63 letters, digits or underscores.
func cutIdent(s string) (rest string, ok bool) {
	end := strings.IndexByte(s, ']')
	if end < 1 || end > 64 {
		return s, false
	}
	for i, r := range s[:end] {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		other := r >= '0' && r <= '9' || r == '_'
		if !letter && (i == 0 || !other) {
			return s, false
		}
	}
	return s[end+1:], true
}

// CheckpointURL returns the checkpoint to store for a walk whose next link is
// link: the collection URL rebuilt with only the parameters the client sends
// itself, so a hostile next link plants nothing in the database. It returns
// "" for "" (the walk ended).
func (c *Client) CheckpointURL(resource, link string) (string, error) {
	if link == "" {
		return "", nil
	}
	u, err := url.Parse(link)
	if err != nil {
		return "", errors.New("the next link does not parse")
	}
	kept := url.Values{}
	for part := range strings.SplitSeq(u.RawQuery, "&") {
		rawName, rawValue, _ := strings.Cut(part, "=")
		name, errName := url.QueryUnescape(rawName)
		value, errValue := url.QueryUnescape(rawValue)
		if errName != nil || errValue != nil || !sentParam(name) || kept.Has(name) {
			continue
		}
		if !valueShaped(name, value) {
			return "", errors.New("the next link holds " + name + " with a value usersync does not send (not shown)")
		}
		kept.Set(name, value)
	}
	var q Query
	for name := range kept {
		q = q.set(name, kept.Get(name))
	}
	return c.CollectionURL(resource, q)
}

// requestURI returns the path and query of a (sanitized) URL, for one-line
// messages such as "GET /api/v2/users?count=false: ...".
func requestURI(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	return u.RequestURI()
}
