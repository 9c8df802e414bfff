package jsonapi

import (
	"net/url"
	"strconv"
	"strings"
	"time"
)

// maxCursor bounds a page[after] cursor: opaque, but stored in sync_runs
// and printed in errors, so a server cannot plant a long text in it.
const maxCursor = 1024

// isCursor reports whether name carries the server's position in a walk.
func isCursor(name string) bool { return name == "page[after]" || name == "page[offset]" }

// cleanCursor reports whether v is a cursor usersync stores and prints: at
// most maxCursor letters, digits and the marks of base64 and its URL-safe
// form, nothing else (no space, quote, control character or '%').
func cleanCursor(v string) bool {
	if v == "" || len(v) > maxCursor {
		return false
	}
	return !strings.ContainsFunc(v, func(r rune) bool { return !cursorRune(r) })
}

// cursorRune says whether r may appear in a cursor: letters, digits and the
// characters of base64 and URL-safe encodings.
func cursorRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_+/=.~", r)
}

// digits reports whether v is a number of 1 to max digits.
func digits(v string, max int) bool {
	if v == "" || len(v) > max {
		return false
	}
	_, err := strconv.ParseUint(v, 10, 64)
	return err == nil
}

// valueShaped reports whether v, the value of a parameter the client sends
// (sentParam name), has the shape of a value the client builds (Query): a
// stored checkpoint whose values have another shape was not made by
// usersync, and a printed URL shows such a value as REDACTED.
func valueShaped(name, v string) bool {
	switch {
	case name == "page[after]":
		return cleanCursor(v)
	case name == "page[size]" || name == "page[offset]":
		return digits(v, 18)
	case name == "count" || strings.HasPrefix(name, "provide"):
		return v == "true" || v == "false"
	case name == "sort":
		return listOf(v, func(s string) bool { return isIdent(strings.TrimPrefix(s, "-")) })
	case name == "include":
		return listOf(v, isIdent)
	case strings.HasPrefix(name, "fields["):
		return v == "" || listOf(v, isIdent)
	case strings.HasPrefix(name, "filter["):
		return listOf(v, filterItem)
	}
	return false
}

// listOf reports whether v is a comma-separated list of items that ok accepts.
func listOf(v string, ok func(string) bool) bool {
	for item := range strings.SplitSeq(v, ",") {
		if !ok(item) {
			return false
		}
	}
	return true
}

// isIdent reports whether s is a plain identifier (cutIdent's).
func isIdent(s string) bool {
	rest, ok := cutIdent(s + "]")
	return ok && rest == ""
}

// filterItem reports whether s is one filter value the client builds: an
// id, a timestamp in TimeLayout or inf, or a range "from..to" of them.
func filterItem(s string) bool {
	from, to, isRange := strings.Cut(s, "..")
	end := func(e string) bool {
		if e == "inf" || digits(e, 19) {
			return true
		}
		_, err := time.Parse(TimeLayout, e)
		return err == nil
	}
	return end(from) && (!isRange || end(to))
}

// checkSent checks the parameters of a next link that the client sends
// itself (sentParam) against the query of the walk's first request, sent:
// a cursor must be clean (cleanCursor, or digits for page[offset]), a page
// size at most the one sent, and every other such parameter must hold the
// value sent. Parameters of other names are followed as the server sent
// them (they are never stored nor printed). On a mismatch it returns the
// link with the values sent put back (those not sent, and a bad cursor,
// dropped), fit to checkpoint, and a *NextLinkError naming only the
// parameters usersync sent.
func checkSent(link string, sent url.Values) (string, error) {
	u, err := url.Parse(link)
	if err != nil {
		return link, &NextLinkError{URL: "(unparsable URL)", Reason: "not a valid URL"}
	}
	var named []string
	others := 0
	parts := strings.Split(u.RawQuery, "&")
	kept := parts[:0]
	for _, part := range parts {
		rawName, rawValue, _ := strings.Cut(part, "=")
		name, errName := url.QueryUnescape(rawName)
		value, errValue := url.QueryUnescape(rawValue)
		if errName != nil || !sentParam(name) || (errValue == nil && sentValue(name, value, sent)) {
			kept = append(kept, part)
			continue
		}
		if !sent.Has(name) {
			others++
			continue
		}
		named = append(named, name)
		if !isCursor(name) {
			kept = append(kept, url.QueryEscape(name)+"="+url.QueryEscape(sent.Get(name)))
		}
	}
	if len(named) == 0 && others == 0 {
		return link, nil
	}
	u.RawQuery = strings.Join(kept, "&")
	reason := "it changes " + strings.Join(named, ", ")
	switch {
	case len(named) == 0:
		reason = "it adds " + strconv.Itoa(others) + " parameter(s) under names usersync uses but did not send"
	case others > 0:
		reason += " and adds " + strconv.Itoa(others) + " parameter(s) usersync did not send"
	}
	return u.String(), &NextLinkError{URL: sanitizeURL(u.String()), Reason: reason + " (values not shown)"}
}

// sentValue reports whether value may stand under name in a next link of a
// walk whose first request's query was sent.
func sentValue(name, value string, sent url.Values) bool {
	switch name {
	case "page[after]":
		return cleanCursor(value)
	case "page[offset]":
		return digits(value, 18)
	case "page[size]":
		if !sent.Has(name) {
			return digits(value, 6)
		}
		n, err := strconv.Atoi(value)
		max, errMax := strconv.Atoi(sent.Get(name))
		return digits(value, 6) && err == nil && errMax == nil && n >= 1 && n <= max
	}
	vs, ok := sent[name]
	return ok && len(vs) == 1 && vs[0] == value
}
